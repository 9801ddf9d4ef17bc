"""Bad data the footers cannot show, and an output inside the input: scenarios the Ray and the Spark tests run alike.

Each takes the engine's in-process ``main`` (its engine started by the test module) and a root
(local or S3). Problems found before any work are refused in one line, exit 2, nothing written
(``checks_scenarios.refused``); problems only the run can meet (a damaged page, a null id the
footers did not count, ids repeated under ``--skip-id-check``) stop it with one line, exit 3,
no traceback from any process, the parts committed so far kept for ``--resume``.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from job.cli import run_main
from job.input.data_files import list_data_files
from job.output.parts import part_name
from job.sample.synthetic import synthetic_rows
from storage import resolve
from tests.common.contract import assert_output_contract, read_output
from tests.common.damage import garble_page
from tests.integration.checks_scenarios import Main, files_under, job_args, refused, write_images

RESUME = "then run again with --resume, which keeps the parts committed so far"
NULL_ID = ("its id (column 'id') is null{}; every row needs an id, which names its output row: fill the ids in, or pass "
           "--id-column naming a column without nulls (one the files lack gives '<path relative to --input>:<row>' ids)")


def stopped(main: Main, argv: Sequence[str], capfd) -> str:
    """Run ``main`` as its command does; assert exit 3 and one error line, no traceback from any process; return the line.

    ``capfd`` sees the file descriptors, so Ray's and the JVM's own logs of a failed task are caught too.
    """
    capfd.readouterr()
    _log_to_this_stderr()
    assert run_main(main, list(argv)) == 3
    err = capfd.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in err and " ERROR " not in err, err[-5000:]
    return errors[0].removeprefix("error: ")


def _log_to_this_stderr() -> None:
    """Point log handlers bound to an earlier test's closed stderr capture at this test's.

    Ray's console handler (``ray._private.log.PlainRayHandler``) keeps the ``sys.stderr`` it was
    made under: once that capture is closed, each log line would become a "--- Logging error ---"
    traceback, and this test would not see Ray's own lines.
    """
    for logger in [logging.getLogger(), *logging.root.manager.loggerDict.values()]:
        for handler in getattr(logger, "handlers", ()):
            if isinstance(handler, logging.StreamHandler) and getattr(handler.stream, "closed", False):
                handler.stream = sys.stderr  # assigned: setStream() would flush the closed stream first


def write_table(uri: str, endpoint: str | None, ids: list, write_statistics: bool = True) -> None:
    """One Parquet file of tiny JPEGs with these ids (None: a null id)."""
    location = resolve(uri, endpoint)
    location.filesystem.create_dir(location.path.rsplit("/", 1)[0], recursive=True)
    images = [data for _, data in synthetic_rows(len(ids), "jpeg", (32, 24), seed=7)]
    with location.filesystem.open_output_stream(location.path) as out:
        pq.write_table(pa.table({"id": pa.array(ids, pa.string()), "image": pa.array(images, pa.binary())}), out,
                       write_statistics=write_statistics)


def a_null_id_is_refused_before_any_work(main: Main, root: str, endpoint: str | None, capsys) -> None:
    """A null id beside the id its old stand-in name would have taken: refused naming file and row, with or without the id check."""
    write_table(f"{root}/in/f1.parquet", endpoint, [None, "f1.parquet:0", "b", "c"])
    argv = job_args(f"{root}/in", f"{root}/out", endpoint)
    assert refused(main, argv, capsys) == f"{root}/in/f1.parquet row 0: " + NULL_ID.format(" (1 rows in 1 files have none)")
    # --skip-id-check reads no id; the footer's null count still refuses it before any work.
    assert refused(main, [*argv, "--skip-id-check"], capsys) == f"{root}/in/f1.parquet row 0: " + NULL_ID.format("")
    assert files_under(f"{root}/out", endpoint) == []


def a_null_id_the_footers_do_not_count_stops_the_run(main: Main, root: str, endpoint: str | None, capfd) -> None:
    """--skip-id-check and a writer without statistics: the run meets the null, stops in one line; fixed, --resume finishes."""
    ids = [f"img-{i}" for i in range(12)]
    write_images(f"{root}/in", endpoint, ids)
    write_table(f"{root}/in/part-00001.parquet", endpoint, [*ids[6:8], None, *ids[9:]], write_statistics=False)
    argv = job_args(f"{root}/in", f"{root}/out", endpoint, "--skip-id-check")
    assert stopped(main, argv, capfd) == f"{root}/in/part-00001.parquet row 2: {NULL_ID.format('')}; {RESUME}"
    assert "_SUCCESS.json" not in files_under(f"{root}/out", endpoint)
    write_images(f"{root}/in", endpoint, ids)  # the ids filled in
    assert_resume_finishes(main, argv, root, endpoint, ids)


def repeated_ids_without_the_id_check_are_named_at_the_end(main: Main, root: str, endpoint: str | None, capfd) -> None:
    ids = [f"img-{i}" for i in range(12)]
    ids[10] = "img-3"  # part-00001's row 4 repeats part-00000's row 3
    write_images(f"{root}/in", endpoint, ids)
    line = stopped(main, job_args(f"{root}/in", f"{root}/out", endpoint, "--skip-id-check"), capfd)
    location = resolve(f"{root}/in", endpoint)
    listed = list_data_files(location)  # parts are named by their input file's version too
    first, second = (part_name(location.path, path, listed[path]) for path in
                     (location.join(f"part-0000{n}.parquet") for n in (0, 1)))
    assert line == (f"output repeats ids: 'img-3' is at {root}/out/{first} row 3, {root}/out/{second} row 4 (1 ids repeat, "
                    "1 rows too many), as the input does (--skip-id-check skipped the check that refuses this before any "
                    "work); no manifest was written: make the input's ids unique, then run again with --resume, which "
                    "redoes the files that changed")
    assert "_SUCCESS.json" not in files_under(f"{root}/out", endpoint)


def a_damaged_page_stops_the_run_and_resume_finishes(main: Main, root: str, endpoint: str | None, capfd) -> None:
    """Footer fine, a page garbled: one line naming the file, its rows and the fix; the file restored, --resume finishes."""
    ids = [f"img-{i}" for i in range(12)]
    write_images(f"{root}/in", endpoint, ids)
    assert garble_page(f"{root}/in/part-00001.parquet", endpoint, row_group=0) == (0, 5)
    argv = job_args(f"{root}/in", f"{root}/out", endpoint)
    line = stopped(main, argv, capfd)
    assert line.startswith(f"{root}/in/part-00001.parquet: row group 0 (rows 0-5) cannot be read (")
    assert line.endswith("): the file is damaged (its footer reads, a page does not): rewrite it from its source, or move "
                         f"it out of --input; {RESUME}")
    assert "_SUCCESS.json" not in files_under(f"{root}/out", endpoint)
    write_images(f"{root}/in", endpoint, ids)  # rewritten from its source
    assert_resume_finishes(main, argv, root, endpoint, ids)


def an_output_inside_the_input_is_refused_up_front(main: Main, root: str, endpoint: str | None, capsys) -> None:
    """Accepted once, it made the next --resume or --overwrite read the job's own parts as input: refused before that first run."""
    write_images(f"{root}/in", endpoint, [f"img-{i}" for i in range(6)])
    line = refused(main, job_args(f"{root}/in", f"{root}/in/preds", endpoint), capsys)
    assert line == (f"--output {root}/in/preds lies in --input {root}/in: the next run (--resume, --overwrite) would read "
                    "this job's parts as input, and so would every other reader of the input; choose an --output outside "
                    "--input")
    assert files_under(f"{root}/in", endpoint) == ["part-00000.parquet"]


def assert_resume_finishes(main: Main, argv: list[str], root: str, endpoint: str | None, ids: list[str]) -> None:
    """The input fixed, ``--resume`` finishes the stopped run: the whole contract holds, the manifest written last."""
    manifest = main([*argv, "--resume"])
    rows, written = read_output(f"{root}/out", endpoint)
    assert written == manifest
    assert_output_contract(rows, manifest, ids, bad={})
