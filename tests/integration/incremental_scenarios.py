"""Incremental runs (--incremental): scenarios the Ray, Spark and local-engine tests run the same way.

A nightly run over a growing input: the first run does everything; a night with nothing new
writes nothing; a night with files added, one replaced and one deleted runs only those and ends
with the same table a fresh full run over the current input makes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from job.ids.index import IdIndex, index_files
from job.sample.synthetic import synthetic_rows
from storage import resolve
from tests.common.contract import read_output
from tests.integration.checks_scenarios import files_under, job_args

Main = Callable[[Sequence[str] | None], dict]
ROWS_PER_FILE = 3


def write_night(uri: str, endpoint: str | None, first: int, files: int, prefix: str = "img") -> list[str]:
    """``files`` input files of tiny JPEGs named part-<first>... with ids ``<prefix>-<n>``; returns the ids."""
    ids = [f"{prefix}-{first * ROWS_PER_FILE + i:05d}" for i in range(files * ROWS_PER_FILE)]
    images = (data for _, data in synthetic_rows(len(ids), "jpeg", (32, 24), seed=first))
    location = resolve(uri, endpoint)
    for k in range(files):
        rows = list(zip(ids[k * ROWS_PER_FILE:(k + 1) * ROWS_PER_FILE], [next(images) for _ in range(ROWS_PER_FILE)]))
        table = pa.table({"id": [i for i, _ in rows], "image": pa.array([d for _, d in rows], pa.binary())})
        with location.writer(location.join(f"part-{first + k:05d}.parquet")) as out:
            pq.write_table(table, out)
    return ids


def delete(uri: str, endpoint: str | None, name: str) -> None:
    location = resolve(uri, endpoint)
    location.filesystem.delete_file(location.join(name))


def by_id(rows: list[dict]) -> dict[str, tuple]:
    return {r["id"]: (r["label"], r["topk_labels"], r["error"]) for r in rows}


def nightly_runs_equal_a_fresh_full_run(main: Main, root: str, endpoint: str | None, *engine_args: str) -> None:
    """Add, replace and delete input files between runs; the table always equals a fresh run over the input."""
    source, out = f"{root}/in", f"{root}/out"
    kept = write_night(source, endpoint, 0, 3)[:ROWS_PER_FILE]  # part-00000's ids: the file that stays
    args = job_args(source, out, endpoint, "--incremental", *engine_args)
    first = main(args)
    assert first["table"]["delta"]["added"] == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]

    again = main(args)  # nothing new: no engine, nothing written, the same manifest
    assert again["run_id"] == first["run_id"] and len([f for f in files_under(out, endpoint) if f.startswith("_history/")]) == 1

    added = write_night(source, endpoint, 3, 1)
    replaced = write_night(source, endpoint, 1, 1, prefix="new")  # part-00001 again: other ids, other images
    delete(source, endpoint, "part-00002.parquet")
    night = main(args)
    delta = night["table"]["delta"]
    assert (delta["added"], delta["replaced"], delta["removed"]) == (["part-00003.parquet"], ["part-00001.parquet"],
                                                                     ["part-00002.parquet"])
    assert (night["input_files"]["resumed"], night["input_files"]["run"], night["counts"]["rows_out"]) == (1, 2, 9)
    rows, manifest = read_output(out, endpoint)
    assert manifest == night and set(by_id(rows)) == {*kept, *added, *replaced}
    fresh = main(job_args(source, f"{root}/fresh", endpoint, *engine_args))
    assert by_id(rows) == by_id(read_output(f"{root}/fresh", endpoint)[0]) and fresh["counts"] == night["counts"]
    history = [f for f in files_under(out, endpoint) if f.startswith("_history/")]
    segments = [segment.name for segment in IdIndex.read(resolve(out, endpoint), night["table"]["index"]).segments]
    assert len(history) == 2 and {f for f in files_under(out, endpoint) if f.startswith("_index/")} == index_files(segments)


def manifest_of(uri: str, endpoint: str | None) -> dict:
    location = resolve(uri, endpoint)
    with location.filesystem.open_input_stream(location.join("_SUCCESS.json")) as f:
        return json.loads(f.read())


def a_replaced_input_file_is_redone_on_resume(main: Main, root: str, endpoint: str | None, *engine_args: str) -> None:
    """A part is kept by --resume only if its input file is the same file (size, modification time)."""
    source, out = f"{root}/in", f"{root}/out"
    stale = write_night(source, endpoint, 0, 2)[ROWS_PER_FILE:]  # part-00001's first ids
    main(job_args(source, out, endpoint, *engine_args))
    delete(out, endpoint, "_SUCCESS.json")  # as if the driver died after the last part
    replaced = write_night(source, endpoint, 1, 1, prefix="new")  # same name, same row count, new ids
    resumed = main(job_args(source, out, endpoint, "--resume", *engine_args))
    rows, _ = read_output(out, endpoint)
    assert (resumed["input_files"]["resumed"], resumed["input_files"]["run"]) == (1, 1)
    assert set(replaced) <= set(by_id(rows)) and set(stale).isdisjoint(by_id(rows)) and len(rows) == 2 * ROWS_PER_FILE
