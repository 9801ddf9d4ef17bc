"""Bad nights: scenarios the local-engine and the Ray tests run the same way, each ending in a table
that equals a fresh full run over the input as it is then.

A night's plan is one computation (``job.night.plan``), so each of these is an input to it: files
without rows, a night stopped before its manifest, a part deleted by hand.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from job import driver
from job.cli import run_main
from job.engine import Engine
from storage import resolve
from tests.common.contract import read_output
from tests.integration.checks_scenarios import files_under, job_args, refused
from tests.integration.incremental_scenarios import ROWS_PER_FILE, Main, by_id, delete, write_night


def write_empty(uri: str, endpoint: str | None, name: str) -> None:
    """A Parquet file of our columns and no row, as Spark's append of an empty batch writes one."""
    location = resolve(uri, endpoint)
    with location.writer(location.join(name)) as out:
        pq.write_table(pa.table({"id": pa.array([], pa.string()), "image": pa.array([], pa.binary())}), out)


def part_of(manifest: dict, name: str) -> str:
    return manifest["table"]["files"][name]["part"]


def delete_output_file(uri: str, endpoint: str | None, name: str) -> None:
    location = resolve(uri, endpoint)
    location.filesystem.delete_file(location.join(name))


def read_bytes(uri: str, endpoint: str | None, name: str) -> bytes:
    location = resolve(uri, endpoint)
    with location.filesystem.open_input_stream(location.join(name)) as f:
        return f.read()


def write_bytes(uri: str, endpoint: str | None, name: str, data: bytes) -> None:
    location = resolve(uri, endpoint)
    with location.writer(location.join(name)) as out:
        out.write(data)


def same_as_fresh(main: Main, root: str, endpoint: str | None, night: dict, *engine_args: str) -> None:
    """The table at ``root/out`` holds the rows a fresh full run over ``root/in`` makes, and its manifest is ``night``."""
    rows, manifest = read_output(f"{root}/out", endpoint)
    fresh = main(job_args(f"{root}/in", f"{root}/fresh-{night['run_id']}", endpoint, *engine_args))
    assert manifest == night and by_id(rows) == by_id(read_output(f"{root}/fresh-{night['run_id']}", endpoint)[0])
    assert fresh["counts"] == night["counts"] and len(rows) == night["counts"]["rows_in"]


def empty_files_are_files_of_the_table(main: Main, root: str, endpoint: str | None, *engine_args: str) -> None:
    """A file without rows never blocks a night: it joins the table with an empty part, and a file emptied loses its rows."""
    source, out = f"{root}/in", f"{root}/out"
    write_night(source, endpoint, 0, 2)
    args = job_args(source, out, endpoint, "--incremental", *engine_args)
    main(args)
    write_empty(source, endpoint, "part-00002.parquet")  # a night whose only new file is empty
    night = main(args)
    assert night["table"]["delta"]["added"] == ["part-00002.parquet"] and night["counts"]["rows_in"] == 2 * ROWS_PER_FILE
    write_night(source, endpoint, 3, 1)
    assert main(args)["table"]["delta"]["added"] == ["part-00003.parquet"]  # the empty file is not checked again
    write_empty(source, endpoint, "part-00000.parquet")  # a file truncated to no rows
    night = main(args)
    assert night["table"]["delta"]["replaced"] == ["part-00000.parquet"] and night["counts"]["rows_in"] == 2 * ROWS_PER_FILE
    same_as_fresh(main, root, endpoint, night, *engine_args)


def a_stopped_night_is_finished_by_resume(main: Main, root: str, endpoint: str | None, *engine_args: str) -> None:
    """A night stopped after some parts and before its manifest is finished by --resume, as by --incremental."""
    source, out = f"{root}/in", f"{root}/out"
    write_night(source, endpoint, 0, 2)
    first = main(job_args(source, out, endpoint, "--incremental", *engine_args))
    write_night(source, endpoint, 2, 2)
    saved = {name: read_bytes(out, endpoint, name) for name in ["_SUCCESS.json", *index_of(out, endpoint)]}
    stopped = main(job_args(source, out, endpoint, "--incremental", *engine_args))
    for name in ["_SUCCESS.json", *index_of(out, endpoint), f"_history/{stopped['run_id']}.json"]:
        delete_output_file(out, endpoint, name)  # as if the night had died before its index and manifest...
    for name, data in saved.items():
        write_bytes(out, endpoint, name, data)
    delete_output_file(out, endpoint, part_of(stopped, "part-00003.parquet"))  # ...and before its last part
    night = main(job_args(source, out, endpoint, "--resume", *engine_args))
    assert night["run_id"] != first["run_id"] and night["table"]["delta"]["added"] == ["part-00002.parquet",
                                                                                       "part-00003.parquet"]
    assert (night["input_files"]["resumed"], night["input_files"]["run"]) == (3, 1)  # the stopped night's part adopted
    same_as_fresh(main, root, endpoint, night, *engine_args)


def a_part_deleted_by_hand_is_redone(main: Main, root: str, endpoint: str | None, *engine_args: str) -> None:
    """A part gone from the table is redone by the next night, whether it brings new files or none, or by --resume."""
    source, out = f"{root}/in", f"{root}/out"
    write_night(source, endpoint, 0, 3)
    first = main(job_args(source, out, endpoint, "--incremental", *engine_args))
    delete_output_file(out, endpoint, part_of(first, "part-00000.parquet"))
    night = main(job_args(source, out, endpoint, "--incremental", *engine_args))  # nothing new in the input
    assert night["run_id"] != first["run_id"] and night["input_files"]["run"] == 1
    delete_output_file(out, endpoint, part_of(first, "part-00001.parquet"))
    write_night(source, endpoint, 3, 1)
    night = main(job_args(source, out, endpoint, "--incremental", *engine_args))  # and a new file
    assert night["input_files"]["run"] == 2 and night["table"]["delta"]["added"] == ["part-00003.parquet"]
    delete_output_file(out, endpoint, part_of(first, "part-00002.parquet"))
    night = main(job_args(source, out, endpoint, "--resume", *engine_args))
    assert night["input_files"]["run"] == 1
    same_as_fresh(main, root, endpoint, night, *engine_args)


def changed_under_the_run(engine: Engine, root: str, endpoint: str | None, change: Callable[[str], None]) -> str:
    """Run ``engine`` with ``change(input uri)`` done after the plan, before the engine reads; returns its one line.

    The run stops with exit 3 and one line; --resume then plans the input as it is and finishes the table.
    """
    source, out = f"{root}/in", f"{root}/out"
    write_night(source, endpoint, 0, 3)

    def execute(job, session, args):
        change(source)
        return engine.execute(job, session, args)

    changing = dataclasses.replace(engine, execute=execute)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = run_main(lambda argv: driver.main(changing, argv), job_args(source, out, endpoint))
    line = err.getvalue().strip().splitlines()[-1]
    assert code == 3 and line.startswith("error: ") and "Traceback" not in err.getvalue(), err.getvalue()
    night = driver.main(engine, job_args(source, out, endpoint, "--resume"))
    same_as_fresh(lambda argv: driver.main(engine, argv), root, endpoint, night)
    return line


def an_input_file_deleted_mid_run(engine: Engine, root: str, endpoint: str | None) -> None:
    line = changed_under_the_run(engine, root, endpoint, lambda source: delete(source, endpoint, "part-00001.parquet"))
    assert "part-00001.parquet: the input file was deleted after the job planned it" in line and "--resume" in line


def an_input_file_replaced_mid_run(engine: Engine, root: str, endpoint: str | None) -> None:
    line = changed_under_the_run(engine, root, endpoint, lambda source: write_night(source, endpoint, 1, 1, prefix="x" * 9))
    assert "part-00001.parquet: the input file changed after the job planned it" in line and "--resume" in line


def a_damaged_index_is_refused_in_one_line(main: Main, root: str, endpoint: str | None, capsys) -> None:
    source, out = f"{root}/in", f"{root}/out"
    write_night(source, endpoint, 0, 2)
    first = main(job_args(source, out, endpoint, "--incremental"))
    write_bytes(out, endpoint, first["table"]["index"], b"PAR1 not an index")
    write_night(source, endpoint, 2, 1)
    line = refused(main, job_args(source, out, endpoint, "--incremental"), capsys)
    assert f"{first['table']['index']}: the table's id index cannot be read" in line and "--overwrite" in line


def a_renamed_file_under_keep_removed(main: Main, root: str, endpoint: str | None) -> None:
    """--keep-removed keeps the rows of files gone, but a file renamed brings its ids back: its old part goes."""
    source, out = f"{root}/in", f"{root}/out"
    write_night(source, endpoint, 0, 3)
    args = job_args(source, out, endpoint, "--incremental", "--keep-removed")
    main(args)
    write_bytes(source, endpoint, "renamed.parquet", read_bytes(source, endpoint, "part-00001.parquet"))
    delete(source, endpoint, "part-00001.parquet")
    delete(source, endpoint, "part-00002.parquet")  # gone for good: its rows stay
    night = main(args)
    delta = night["table"]["delta"]
    assert (delta["added"], delta["removed"], delta["kept_removed"]) == (["renamed.parquet"], ["part-00001.parquet"],
                                                                        ["part-00002.parquet"])
    rows, _ = read_output(out, endpoint)
    assert len(rows) == len({r["id"] for r in rows}) == 3 * ROWS_PER_FILE
    assert main(args)["run_id"] == night["run_id"]  # and the next night has nothing to do


def index_of(out: str, endpoint: str | None) -> list[str]:
    """The files of the table's ids index under ``out`` (its segments and their filters)."""
    return [name for name in files_under(out, endpoint) if name.startswith("_index/")]


KILL_STEPS = ("after-a-part", "before-the-commit", "after-the-commit", "after-the-manifest")


class Killed(Exception):
    """The night's process dying at a step (raised where it would have died)."""


def kill_at(patch, step: str) -> None:
    """Make the next night die at ``step`` (one of KILL_STEPS)."""
    from job.night import finish
    from job.output.parts import Parts

    def die(*args, **kwargs):
        raise Killed(step)

    if step == "after-a-part":
        write, written = Parts.write, []

        def write_then_die(self, file, table):
            if written:
                die()
            written.append(write(self, file, table))
            return written[-1]

        patch.setattr(Parts, "write", write_then_die)
    else:
        name = {"before-the-commit": "commit_run", "after-the-commit": "write_manifest", "after-the-manifest": "copy_manifest"}
        patch.setattr(finish, name[step], die)


def table_ids(out: str, endpoint: str | None, table_format: str) -> list[str]:
    """Every id the table holds, as its readers read it (the plain folder: the manifest's parts)."""
    from tests.integration.table_scenarios import read_delta, read_iceberg

    if table_format == "delta":
        return read_delta(out, endpoint).column("id").to_pylist()
    if table_format == "iceberg":
        return read_iceberg(out, endpoint).column("id").to_pylist()
    return [row["id"] for row in read_output(out, endpoint)[0]]


def a_night_killed_at_a_step_is_finished(main: Main, root: str, endpoint: str | None, step: str, table_format: str,
                                         monkeypatch, *engine_args: str) -> None:
    """A night that replaces, deletes and adds input files dies at ``step``; --resume, then --incremental, end it with
    every input id once, and readers of the table never see a row missing, extra or stale once one exits 0."""
    import pytest

    source, out = f"{root}/in", f"{root}/out"
    kept = write_night(source, endpoint, 0, 3)[:ROWS_PER_FILE]
    args = job_args(source, out, endpoint, "--table-format", table_format, *engine_args)
    main([*args, "--incremental"])
    tonight = {*kept, *write_night(source, endpoint, 1, 1, prefix="new"), *write_night(source, endpoint, 3, 1)}
    delete(source, endpoint, "part-00002.parquet")
    with monkeypatch.context() as patch:
        kill_at(patch, step)
        with pytest.raises(Killed):
            main([*args, "--incremental"])
    for flag in ("--resume", "--incremental"):
        night = main([*args, flag])
        ids = table_ids(out, endpoint, table_format)
        assert len(ids) == len(set(ids)) == night["counts"]["rows_out"] and set(ids) == tonight, (flag, sorted(ids))


def a_part_cut_short_is_redone(main: Main, root: str, endpoint: str | None, *engine_args: str) -> None:
    """A part truncated between nights (a copy cut short, a disk full) is redone by --resume and by --incremental."""
    source, out = f"{root}/in", f"{root}/out"
    write_night(source, endpoint, 0, 3)
    first = main(job_args(source, out, endpoint, "--incremental", *engine_args))
    for flag, name in (("--resume", "part-00000.parquet"), ("--incremental", "part-00001.parquet")):
        part = part_of(first, name)
        write_bytes(out, endpoint, part, read_bytes(out, endpoint, part)[:100])
        night = main(job_args(source, out, endpoint, flag, *engine_args))
        assert night["run_id"] != first["run_id"] and night["input_files"]["run"] == 1, flag
    same_as_fresh(main, root, endpoint, night, *engine_args)
