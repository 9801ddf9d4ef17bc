"""--incremental's edges, on the local engine (local paths and S3): what is refused, kept, resumed, and never started."""

from __future__ import annotations

import dataclasses
import json
import os

import pyarrow.parquet as pq
import pytest

from job import driver
from job.sample.synthetic import synthetic_rows
from runners import local_job
from storage import resolve
from tests.common.contract import read_output
from tests.integration.checks_scenarios import files_under, job_args, refused
from tests.integration.incremental_scenarios import ROWS_PER_FILE, delete, manifest_of, write_night

LOCAL = ("--workers", "0")


def main(argv):
    return local_job.main([*argv, *LOCAL])


def never_started(args):
    raise AssertionError("the engine was started for a night with nothing to compute")


def test_nights_without_new_files_start_no_engine(data_root):
    root, endpoint = data_root
    source, out = f"{root}/in", f"{root}/out"
    write_night(source, endpoint, 0, 2)
    first = main(job_args(source, out, endpoint, "--incremental"))
    idle = dataclasses.replace(local_job.ENGINE, start=never_started)
    assert driver.main(idle, [*job_args(source, out, endpoint, "--incremental"), *LOCAL])["run_id"] == first["run_id"]
    delete(source, endpoint, "part-00001.parquet")  # only a removal: still nothing to compute
    night = driver.main(idle, [*job_args(source, out, endpoint, "--incremental"), *LOCAL])
    assert night["table"]["delta"]["removed"] == ["part-00001.parquet"] and night["counts"]["rows_out"] == ROWS_PER_FILE
    assert [f for f in files_under(out, endpoint) if f.startswith("part-")] == night["files"]


def test_a_crashed_incremental_run_is_finished_by_the_next(tmp_path):
    source, out = str(tmp_path / "in"), str(tmp_path / "out")
    write_night(source, None, 0, 1)
    main(job_args(source, out, None, "--incremental"))
    write_night(source, None, 1, 2)

    def one_file_then_die(job, session, args):
        local_job.run_locally(dataclasses.replace(job, pending=dataclasses.replace(job.pending, files=job.pending.files[:1])), args)
        raise RuntimeError("killed after one part")

    with pytest.raises(RuntimeError, match="killed after one part"):
        driver.main(dataclasses.replace(local_job.ENGINE, execute=one_file_then_die), [*job_args(source, out, None, "--incremental"), *LOCAL])
    night = main(job_args(source, out, None, "--incremental"))
    assert night["table"]["delta"]["added"] == ["part-00001.parquet", "part-00002.parquet"]
    assert (night["input_files"]["resumed"], night["input_files"]["run"], night["counts"]["rows_out"]) == (2, 1, 9)


def test_other_options_and_an_older_manifest_are_refused_in_one_line(tmp_path, capsys):
    source, out = str(tmp_path / "in"), str(tmp_path / "out")
    write_night(source, None, 0, 1)
    main(job_args(source, out, None, "--incremental"))
    line = refused(local_job.main, [*job_args(source, out, None, "--incremental", "--topk", "3"), *LOCAL], capsys)
    # The same model's rows with another top-k: no rollout could tell them apart, so only --overwrite is named.
    assert "rows were made with other options of the same model (topk; e.g. topk=5, now 3)" in line
    assert "--overwrite to redo the table" in line and "--rollout-files" not in line
    manifest = manifest_of(out, None)
    del manifest["table"]
    (tmp_path / "out" / "_SUCCESS.json").write_text(json.dumps(manifest))
    line = refused(local_job.main, [*job_args(source, out, None, "--incremental"), *LOCAL], capsys)
    assert "written by an older version, without the table's snapshot" in line and "--overwrite" in line


def test_removed_files_keep_their_parts_on_request(tmp_path):
    source, out = str(tmp_path / "in"), str(tmp_path / "out")
    write_night(source, None, 0, 2)
    main(job_args(source, out, None, "--incremental"))
    delete(source, None, "part-00000.parquet")
    night = main(job_args(source, out, None, "--incremental", "--keep-removed"))
    assert night["table"]["delta"]["kept_removed"] == ["part-00000.parquet"]
    assert night["table"]["files"]["part-00000.parquet"]["removed"] and night["counts"]["rows_out"] == 2 * ROWS_PER_FILE
    assert len(read_output(out)[0]) == 2 * ROWS_PER_FILE


def test_a_new_files_id_already_in_the_table_is_refused_before_any_work(data_root, capsys):
    root, endpoint = data_root
    source, out = f"{root}/in", f"{root}/out"
    write_night(source, endpoint, 0, 2)
    main(job_args(source, out, endpoint, "--incremental"))
    write_night(source, endpoint, 5, 1)
    location = resolve(f"{source}/part-00005.parquet", endpoint)  # the new file, given one id of part-00001
    with location.filesystem.open_input_file(location.path) as f:
        table = pq.read_table(f)
    ids = table.column("id").to_pylist()
    ids[1] = "img-00003"
    with location.filesystem.open_output_stream(location.path) as f:
        pq.write_table(table.set_column(0, "id", [ids]), f)
    line = refused(local_job.main, [*job_args(source, out, endpoint, "--incremental"), *LOCAL], capsys)
    assert "id 'img-00003' of " in line and "part-00005.parquet row 1 is already in the table" in line
    assert not [f for f in files_under(out, endpoint) if "00005" in f]  # nothing was run


def test_a_glob_of_parquet_files_under_the_table_finds_its_parts_alone(tmp_path):
    """Readers that glob (DuckDB read_parquet('out/**/*.parquet'), polars scan_parquet) read every .parquet under the
    prefix: the id index and the history must not be among them, so the glob reads exactly the table's rows."""
    import glob

    source, out = str(tmp_path / "in"), str(tmp_path / "out")
    write_night(source, None, 0, 2)
    main(job_args(source, out, None, "--incremental"))
    write_night(source, None, 2, 1)
    night = main(job_args(source, out, None, "--incremental"))
    found = sorted(glob.glob(f"{out}/**/*.parquet", recursive=True))
    assert [p.removeprefix(out + "/") for p in found] == sorted(night["files"])
    assert pq.read_table(found).num_rows == night["counts"]["rows_out"]


def test_a_table_whose_index_has_the_earlier_layout_goes_on_and_its_next_index_is_in_segments(tmp_path, capsys):
    """A table written before the index had segments (one Parquet row per file: input_file, hashes): its next night
    reads that index whole, refuses an id a kept part holds, then writes the index as one segment and its filter."""
    import numpy as np
    import pyarrow as pa

    from job.ids.index import IdIndex, index_files

    source, out = str(tmp_path / "in"), str(tmp_path / "out")
    write_night(source, None, 0, 2)
    first = main(job_args(source, out, None, "--incremental"))
    index = IdIndex.read(resolve(out), first["table"]["index"])
    held = index.held(np.concatenate([s.whole(index.output)[0] for s in index.segments]), index.files)
    old = pa.table({"input_file": list(held), "hashes": pa.array(list(held.values()), pa.list_(pa.uint64()))},
                   metadata={"id_hash": str(index.hash_version)})
    for name in index_files([first["table"]["index"]]):
        (tmp_path / "out" / name).unlink()
    pq.write_table(old, str(tmp_path / "out" / first["table"]["index"]))

    write_night(source, None, 2, 1, prefix="repeat")
    table = pq.read_table(f"{source}/part-00002.parquet")
    pq.write_table(table.set_column(0, "id", [["img-00004", *table.column("id").to_pylist()[1:]]]), f"{source}/part-00002.parquet")
    line = refused(local_job.main, [*job_args(source, out, None, "--incremental"), *LOCAL], capsys)
    assert "id 'img-00004' of " in line and "is already in the table" in line  # held by part-00001, in the old index

    write_night(source, None, 2, 1, prefix="new")
    night = main(job_args(source, out, None, "--incremental"))
    assert night["table"]["delta"]["added"] == ["part-00002.parquet"] and night["counts"]["rows_out"] == 3 * ROWS_PER_FILE
    assert {f for f in files_under(out, None) if f.startswith("_index/")} == index_files([night["table"]["index"]])
    again = IdIndex.read(resolve(out), night["table"]["index"])
    assert len(again.segments) == 1 and again.files == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]


def test_a_local_image_rewritten_with_its_size_and_mtime_kept_is_redone(tmp_path):
    """A copy tool that keeps times (cp -p, rsync -t) leaves size and mtime as they were: the inode's change time tells."""
    first_image, other_image = sorted((data for _, data in synthetic_rows(2, "jpeg", (32, 24), seed=7)), key=len, reverse=True)
    rewritten = other_image + b"\0" * (len(first_image) - len(other_image))  # readers stop at the JPEG's end marker
    (tmp_path / "in").mkdir()
    for name in ("a.jpg", "b.jpg"):
        (tmp_path / "in" / name).write_bytes(first_image)
    args = job_args(str(tmp_path / "in"), str(tmp_path / "out"), None, "--incremental", "--resize", "40", "--crop", "32")
    main(args)
    assert main(args)["table"]["delta"]["replaced"] == []  # nothing changed: nothing redone
    target = tmp_path / "in" / "b.jpg"
    before = os.stat(target)
    target.write_bytes(rewritten)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (os.stat(target).st_size, os.stat(target).st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    night = main(args)
    assert night["table"]["delta"]["replaced"] and night["input_files"]["resumed"] == 0, night["table"]["delta"]
