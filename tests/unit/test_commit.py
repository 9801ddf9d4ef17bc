"""Parts: deterministic names, atomic whole-file commits (local and S3), verification of the whole output."""

from __future__ import annotations

import json
import os

import pyarrow.parquet as pq
import pytest

from job.errors import DataError
from job.night.manifest import Counts, read_manifest, write_manifest
from job.output.parts import part_name, read_part_record
from job.night.held import list_parts
from job.night.check import ERROR_EXAMPLES, verify
from storage import resolve
from tests.common.datasets import write_mixed
from tests.common.parts import a_manifest, job_parts, predictions


def test_part_names_are_deterministic_readable_and_distinct_per_relative_path():
    name = part_name("/data/in", "/data/in/a/images-001.parquet")
    assert name == part_name("/data/in", "/data/in/a/images-001.parquet")
    assert name.startswith("part-images-001-") and name.endswith(".parquet") and len(name) == len("part-images-001-12345678.parquet")
    assert name != part_name("/data/in", "/data/in/b/images-001.parquet")  # same stem, another folder
    assert part_name("/data/in", "/data/in/x y#z.parquet").startswith("part-x_y_z-")
    # A single-file input is named by the file; relative to other roots the same file keeps its name.
    assert part_name("bucket/in/f.parquet", "bucket/in/f.parquet") == part_name("bucket/in", "bucket/in/f.parquet")


def test_a_local_part_is_renamed_into_place_whole_and_records_its_input(tmp_path):
    write_mixed(str(tmp_path / "in"), rows_per_file=6)
    parts, files = job_parts(str(tmp_path / "in"), str(tmp_path / "out"))
    ids = [f"id-{i}" for i in range(files[0].rows)]
    with pytest.raises(RuntimeError, match="5 output rows for 6 input rows; its part was not written"):
        parts.write(files[0], predictions(ids[:5]))
    assert not (tmp_path / "out").exists() or list_parts(parts.output) == []
    name = parts.write(files[0], predictions(ids))
    assert parts.write(files[0], predictions(ids)) == name  # a retry rewrites the same part
    assert sorted(os.listdir(tmp_path / "out")) == sorted([name, "_staging"])
    assert os.listdir(tmp_path / "out" / "_staging" / "run") == []  # the temporary was renamed, not copied
    rows, record = read_part_record(parts.output, name)
    stat = (tmp_path / "in" / "part-00000.parquet").stat()
    identity = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "ctime_ns": stat.st_ctime_ns}
    assert rows == 6 and record == {"input_file": "part-00000.parquet", "rows": 6, "options": parts.options, "identity": identity,
                                    "run_id": parts.run_id}
    assert pq.read_table(tmp_path / "out" / name).column("id").to_pylist() == ids


def test_an_s3_part_is_one_put_to_its_final_key(s3_bucket, s3_env):
    write_mixed(f"s3://{s3_bucket}/in/", s3_env, rows_per_file=6)
    parts, files = job_parts(f"s3://{s3_bucket}/in/", f"s3://{s3_bucket}/out/", s3_env)
    name = parts.write(files[1], predictions([f"b-{i}" for i in range(files[1].rows)]))
    assert list_parts(parts.output) == [name] and name.startswith("part-part-00001-")
    rows, record = read_part_record(parts.output, name)
    assert rows == files[1].rows and record["input_file"] == "part-00001.parquet"
    assert record["options"]["input"] == f"s3://{s3_bucket}/in" and record["options"]["weights"] == "random"


def check(parts, expected) -> tuple:
    verified = verify(parts.output, expected, expected, {}, ids_as_text=True)
    return verified.counts, verified.examples


def test_verify_holds_every_part_against_the_plan(tmp_path):
    write_mixed(str(tmp_path / "in"), rows_per_file=6)
    parts, files = job_parts(str(tmp_path / "in"), str(tmp_path / "out"), skip_id_check=True)
    expected = {parts.name(f): f for f in files}
    parts.write(files[0], predictions([f"a-{i}" for i in range(files[0].rows)]))
    with pytest.raises(RuntimeError, match=f"{len(files) - 1} of {len(files)} input files have no committed part.*re-run with --resume"):
        check(parts, expected)
    for index, file in enumerate(files[1:], start=1):
        parts.write(file, predictions([f"{'a' if index == 1 else index}-{i}" for i in range(file.rows)]))
    with pytest.raises(DataError, match="output repeats ids: 'a-0' is at .*part-part-00000-.* row 0, .*part-part-00001-.* row 0 "
                                        "\\(6 ids repeat, 6 rows too many\\)"):  # file 1 repeats file 0's ids
        check(parts, expected)
    parts.write(files[1], predictions([f"1-{i}" for i in range(files[1].rows)]))
    counts, examples = check(parts, expected)
    rows = sum(f.rows for f in files)
    assert counts == Counts(rows_in=rows, rows_out=rows, predicted=0, errored=rows) and len(examples) == ERROR_EXAMPLES
    pq.write_table(predictions(["z"]), tmp_path / "out" / "part-stray-00000000.parquet")
    with pytest.raises(RuntimeError, match="1 parts of no planned input file"):
        check(parts, expected)


def test_verify_holds_each_part_to_its_input_files_ids(tmp_path):
    """A part holding other ids than its input file (a stale part of a replaced file) is caught by the final check."""
    ids, _ = write_mixed(str(tmp_path / "in"), rows_per_file=6)
    parts, files = job_parts(str(tmp_path / "in"), str(tmp_path / "out"))
    assert all(f.ids_digest is not None for f in files)
    expected = {parts.name(f): f for f in files}
    start = 0
    for file in files:
        parts.write(file, predictions(ids[start:start + file.rows]))
        start += file.rows
    assert check(parts, expected)[0].rows_out == len(ids)
    parts.write(files[0], predictions([f"stale-{i}" for i in range(files[0].rows)]))
    with pytest.raises(RuntimeError, match="holds other ids than its input file .*part-00000.parquet"):
        check(parts, expected)


def test_manifest_round_trips(tmp_path):
    location = resolve(str(tmp_path))
    written = a_manifest(counts=Counts(1, 1, 1, 0), settings={"ray": {"actors": 2}})
    uri = write_manifest(location, written)
    assert uri == str(tmp_path / "_SUCCESS.json") and read_manifest(location) == written
    assert json.loads((tmp_path / "_SUCCESS.json").read_text())["counts"]["errored"] == 0


def test_a_manifest_of_another_version_is_named_not_guessed(tmp_path):
    (tmp_path / "_SUCCESS.json").write_text(json.dumps({"engine": "ray", "counts": {}}))
    with pytest.raises(ValueError, match="not a manifest of this version: no config, "):
        read_manifest(resolve(str(tmp_path)))
