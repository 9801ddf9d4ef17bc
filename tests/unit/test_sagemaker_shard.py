"""Sharding under the payload cap, the SageMaker options' limits, and .out assembly."""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from job.config import JobConfig
from job.errors import JobError
from job.output.rows import output_schema
from job.output.parts import FILE
from job.several.stages import rows_blob
from runners.sagemaker.assemble import ModelTable, _written_at, assemble, assemble_several
from runners.sagemaker.options import SageMakerOptions
from runners.sagemaker.shard import MB, FileShards, write_shards
from job.prepare import plan_input
from storage import resolve
from tests.common.plans import cpu_execution


def _write_blobs(directory, sizes: list[int]) -> list[str]:
    """Two input files of random "image" blobs (sharding never decodes them)."""
    os.makedirs(directory)
    ids = [f"img-{i}" for i in range(len(sizes))]
    half = len(sizes) // 2
    for part, (lo, hi) in enumerate([(0, half), (half, len(sizes))]):
        table = pa.table({"id": ids[lo:hi], "image": pa.array([os.urandom(s) for s in sizes[lo:hi]], pa.binary())})
        pq.write_table(table, f"{directory}/part-{part}.parquet")
    return ids


def test_shards_fit_the_cap_keep_order_and_refuse_oversized_images(tmp_path):
    sizes = [200_000] * 12 + [int(1.5 * MB)] + [300_000] * 5
    ids = _write_blobs(tmp_path / "in", sizes)
    config = JobConfig(input=str(tmp_path / "in"), output=None, weights="random")
    out = resolve(str(tmp_path / "shards"))
    sharding = write_shards(plan_input(resolve(config.input), config), out, max_payload_mb=1)
    sizes_on_disk = [os.path.getsize(tmp_path / "shards" / s) for s in sharding.shards]
    assert len(sharding.shards) >= 5 and max(sizes_on_disk) <= MB
    shard_ids = sum((pq.read_table(tmp_path / "shards" / s).column("id").to_pylist() for s in sharding.shards), [])
    assert shard_ids == [i for i in ids if i != "img-12"]
    # Refused ids are kept by input file, for that file's part.
    assert [list(file.oversized) for file in sharding.files] == [[], ["img-12"]]
    assert "MaxPayloadInMB=1" in sharding.files[1].oversized["img-12"]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"max_concurrent_transforms": 20, "max_payload_mb": 6}, "20 x --max-payload-mb 6 = 120 exceeds SageMaker's limit of 100"),
        ({"max_payload_mb": 101}, "between 1 and 100"),
        ({"batch_strategy": "Line"}, "MultiRecord, SingleRecord"),
        ({"local": False}, "--role ARN is required"),
    ],
)
def test_options_refuse_what_sagemaker_would(changes, message):
    with pytest.raises(JobError, match=message):
        SageMakerOptions(**{"local": True, "role": None, **changes})


def test_assembly_keeps_every_row_of_a_shard_without_out(tmp_path):
    shards, outs = resolve(str(tmp_path / "in")), resolve(str(tmp_path / "out"))
    os.makedirs(tmp_path / "in"), os.makedirs(tmp_path / "out")
    for name, ids in {"a.parquet": ["1", "2"], "b.parquet": ["3"], "c.parquet": ["4"]}.items():
        pq.write_table(pa.table({"id": ids, "image": [b"x"] * len(ids)}), tmp_path / "in" / name)
    schema = output_schema(cpu_execution(JobConfig(input=None, output=None, weights="random")))
    good = pa.table({"id": ["1", "2"], "label": [3, 4], "label_name": [None, None], "score": [0.5, 0.25],
                     "topk_labels": [[3], [4]], "topk_label_names": [None, None], "topk_scores": [[0.5], [0.25]],
                     "error": [None, None]}, schema=schema)
    pq.write_table(good, tmp_path / "out" / "a.parquet.out")
    pq.write_table(good.slice(0, 1), tmp_path / "out" / "c.parquet.out")  # wrong ids for shard c
    # Two input files: the first became shards a and b, the second shard c and an image too big to send.
    files = [FileShards(["a.parquet", "b.parquet"]), FileShards(["c.parquet"], {"5": "too big"})]
    written: dict[int, list[dict]] = {}
    failed = assemble(files, shards, outs, lambda index, table: written.setdefault(index, table.to_pylist()), schema,
                      failures={"b.parquet": "HTTP 500: boom"})
    assert failed == ["b.parquet", "c.parquet"]
    assert [[r["id"] for r in written[i]] for i in (0, 1)] == [["1", "2", "3"], ["4", "5"]]  # one call per input file
    rows = {r["id"]: r for r in written[0] + written[1]}
    assert rows["1"]["label"] == 3 and rows["2"]["error"] is None
    assert "no .out object for shard b.parquet" in rows["3"]["error"] and "HTTP 500: boom" in rows["3"]["error"]
    assert "does not hold one output row per shard row" in rows["4"]["error"] and rows["5"]["error"] == "too big"


def test_an_image_object_that_could_not_be_read_is_not_sent_and_keeps_its_reason(tmp_path):
    os.makedirs(tmp_path / "in")
    for name in ("a.jpg", "b.jpg", "c.jpg"):
        (tmp_path / "in" / name).write_bytes(os.urandom(1000))
    config = JobConfig(input=str(tmp_path / "in"), output=None, weights="random")
    plan = plan_input(resolve(config.input), config)
    os.remove(tmp_path / "in" / "b.jpg")  # gone between the plan and the read
    sharding = write_shards(plan, resolve(str(tmp_path / "shards")), max_payload_mb=1)
    sent = pq.read_table([str(tmp_path / "shards" / s) for s in sharding.shards]).column("id").to_pylist()
    assert sorted(sent) == ["a.jpg", "c.jpg"] and list(sharding.files[0].oversized) == ["b.jpg"]
    assert sharding.files[0].oversized["b.jpg"].startswith("object gone: ")


def test_a_shard_done_is_never_placed_before_the_second_s3_says_it_was_written_in():
    """S3's LastModified has whole seconds: a shard written then is read as that second's end, capped by now,
    so a shard done in a run's first second never makes the start-up negative; a finer mtime stays as it is."""
    whole = datetime(2026, 11, 26, 20, 18, 14, tzinfo=timezone.utc)
    assert _written_at(pafs.FileInfo("b/x.out", pafs.FileType.File, mtime=whole)) == whole.timestamp() + 1.0
    fine = datetime(2026, 11, 26, 20, 18, 14, 250_000, tzinfo=timezone.utc)
    assert _written_at(pafs.FileInfo("b/x.out", pafs.FileType.File, mtime=fine)) == fine.timestamp()
    this_second = datetime.now(timezone.utc).replace(microsecond=0)  # its end is most likely still to come
    assert _written_at(pafs.FileInfo("b/x.out", pafs.FileType.File, mtime=this_second)) <= time.time()


def _model_rows(ids: list[str], schema: pa.Schema, decodes: float) -> pa.Table:
    """A model's rows of a shard as the handler sends them: its columns, then its time and the decodes (first row)."""
    columns = {field.name: pa.nulls(len(ids), field.type) for field in schema}
    columns["id"] = pa.array(ids, pa.string())
    times = {"device_seconds": [0.5] * len(ids), "decodes": [decodes] + [0.0] * (len(ids) - 1),
             "decode_seconds": [decodes / 10] + [0.0] * (len(ids) - 1)}
    return pa.table({**columns, **{name: pa.array(values, pa.float64()) for name, values in times.items()}})


def test_several_models_shards_name_their_file_and_each_out_is_split_by_model(tmp_path):
    os.makedirs(tmp_path / "in")
    files = {"part-0": ["a", "b"], "part-1": ["c", "d", "big"], "part-2": ["e"]}
    for name, ids in files.items():
        images = [os.urandom(int(1.5 * MB) if i == "big" else 1000) for i in ids]
        table = pa.table({"id": ids, "image": pa.array(images, pa.binary())})
        pq.write_table(table, tmp_path / "in" / f"{name}.parquet")
    config = JobConfig(input=str(tmp_path / "in"), output=None, weights="random")
    shards, outs = resolve(str(tmp_path / "shards")), resolve(str(tmp_path / "out"))
    sharding = write_shards(plan_input(resolve(config.input), config), shards, max_payload_mb=1, file_column=True)
    named = [pq.read_table(tmp_path / "shards" / s).column(FILE).to_pylist() for s in sharding.shards]
    assert named == [[0, 0], [1, 1], [2]]
    # Model 0 (a classifier) scores files 0 and 2; model 1 (an embedder) every file.
    schemas = [pa.schema([("id", pa.string()), ("label", pa.int64()), ("error", pa.string())]),
               pa.schema([("id", pa.string()), ("embedding", pa.list_(pa.float32(), 2)), ("error", pa.string())])]
    os.makedirs(tmp_path / "out")
    both = [(0, _model_rows(["a", "b"], schemas[0], 2.0)), (1, _model_rows(["b", "a"], schemas[1], 0.0))]
    pq.write_table(rows_blob(both), tmp_path / "out" / f"{sharding.shards[0]}.out")
    pq.write_table(rows_blob([(0, _model_rows(["e"], schemas[0], 1.0))]),  # model 1's rows missing
                   tmp_path / "out" / f"{sharding.shards[2]}.out")
    written: dict[tuple[int, int], list[dict]] = {}
    tables = [ModelTable(schema, files, lambda index, rows, m=model: written.setdefault((m, index), rows.to_pylist()))
              for model, (schema, files) in enumerate(zip(schemas, [frozenset({0, 2}), None]))]
    done = assemble_several(sharding.files, shards, outs, tables, failures={sharding.shards[1]: "HTTP 500: boom"})
    assert sorted(written) == [(0, 0), (0, 2), (1, 0), (1, 1), (1, 2)]  # each model's part of each file it scores
    assert [r["id"] for r in written[0, 0]] == ["a", "b"] and not any(r["error"] for r in written[0, 0] + written[1, 0])
    # No .out, and an image too big to send: error rows in every table that scores the file (here model 1's alone).
    errors = {r["id"]: r["error"] for r in written[1, 1]}
    assert "HTTP 500: boom" in errors["c"] and "HTTP 500: boom" in errors["d"] and "MaxPayloadInMB=1" in errors["big"]
    # A .out without one scoring model's rows is no answer for either model.
    assert all("holds the rows of models [0]" in r["error"] for r in written[0, 2] + written[1, 2])
    assert done.failed == sharding.shards[1:] and (done.decodes, done.decode_seconds) == (2, 0.2)
    assert [len(events) for events in done.progress] == [1, 1] and done.model_seconds == [1.0, 1.0]
