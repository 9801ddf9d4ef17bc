"""Dataset refusals and one run per output prefix: scenarios the Ray and the Spark tests run the same way.

Each scenario takes the engine's in-process ``main`` (its engine already started by the test
module, so a refusal costs a plan, not a start-up) and, where a second, concurrent run is
needed, the engine's command line for a subprocess. Datasets are a few dozen tiny JPEGs.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

import pyarrow.fs as pafs
import pyarrow.parquet as pq

from job.cli import run_main
from job.ids.index import index_files
from job.lease.lease import LEASE_NAME, LeaseOwner, LeaseRecord
from job.sample.synthetic import synthetic_rows, write_dataset
from storage import Location, resolve
from storage.conditional import create_exclusive
from tests.common.contract import assert_output_contract, read_output

Main = Callable[[Sequence[str] | None], dict]
ROWS_PER_FILE = 6
LEASE_TIMEOUT_S = 300  # a loaded 2-core machine imports torch and plans slowly
FIRST_RUN_TIMEOUT_S = 600


def job_args(input_uri: str, output_uri: str, endpoint: str | None, *more: str) -> list[str]:
    endpoint_args = ["--s3-endpoint-url", endpoint] if endpoint else []
    return ["--input", input_uri, "--output", output_uri, "--weights", "random", "--batch-size", "8", *endpoint_args, *more]


def refused(main: Main, argv: Sequence[str], capsys) -> str:
    """Run ``main`` as its command does; assert exit 2 and one line without a traceback; return the line."""
    capsys.readouterr()
    assert run_main(main, list(argv)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err.removeprefix("error: ").rstrip("\n")


def files_under(uri: str, endpoint: str | None) -> list[str]:
    """Every file under ``uri`` (relative paths); [] when nothing is there."""
    location = resolve(uri, endpoint)
    infos = location.filesystem.get_file_info(pafs.FileSelector(location.path, recursive=True, allow_not_found=True))
    return sorted(i.path.removeprefix(location.path.rstrip("/") + "/") for i in infos if i.type == pafs.FileType.File)


def write_images(uri: str, endpoint: str | None, ids: Sequence[str]) -> None:
    """Tiny JPEGs with the given ids, ROWS_PER_FILE to a file (``part-0000N.parquet``)."""
    images = (data for _, data in synthetic_rows(len(ids), "jpeg", (32, 24), seed=7))
    write_dataset(resolve(uri, endpoint), zip(ids, images), ROWS_PER_FILE)


def drop_ids(uri: str, endpoint: str | None) -> None:
    """Rewrite one Parquet file without its id column."""
    location = resolve(uri, endpoint)
    table = pq.read_table(location.path, filesystem=location.filesystem).drop_columns(["id"])
    pq.write_table(table, location.path, filesystem=location.filesystem)


def repeated_ids_are_refused_before_any_work(main: Main, root: str, endpoint: str | None, capsys) -> None:
    ids = [f"img-{i}" for i in range(12)]
    ids[10] = "img-3"  # part-00001's row 4 repeats part-00000's row 3
    write_images(f"{root}/in", endpoint, ids)
    line = refused(main, job_args(f"{root}/in", f"{root}/out", endpoint), capsys)
    assert line == (f"ids in column 'id' are not unique: 'img-3' is at {root}/in/part-00000.parquet row 3, "
                    f"{root}/in/part-00001.parquet row 4 (1 ids repeat, 1 rows too many); the output holds each id once: "
                    "fix the data, or pass --id-column naming a unique column (one the files lack gives "
                    "'<path relative to --input>:<row>' ids)")
    assert files_under(f"{root}/out", endpoint) == []  # no part, no manifest, no lease


def a_file_without_the_id_column_is_refused_before_any_work(main: Main, root: str, endpoint: str | None, capsys) -> None:
    write_images(f"{root}/in", endpoint, [f"img-{i}" for i in range(12)])
    drop_ids(f"{root}/in/part-00001.parquet", endpoint)
    line = refused(main, job_args(f"{root}/in", f"{root}/out", endpoint), capsys)
    assert line == (f"{root}/in/part-00001.parquet: no id column 'id', which {root}/in/part-00000.parquet has; "
                    "ids must come from one column in every file: add it to every file, or pass --id-column naming a "
                    "column every file has (one the files lack gives '<path relative to --input>:<row>' ids)")
    assert files_under(f"{root}/out", endpoint) == []


def partition_folders_and_writer_markers_run(main: Main, root: str, endpoint: str | None, capsys) -> None:
    """A data lake's layout: partition folders whose files share names, markers, checksums, a 0-byte file."""
    ids = [f"img-{i}" for i in range(12)]
    write_images(f"{root}/in/date=2026-11-01", endpoint, ids[:6])
    write_images(f"{root}/in/date=2026-11-02", endpoint, ids[6:])
    location = resolve(f"{root}/in", endpoint)
    junk = {"_SUCCESS": b"", "date=2026-11-01/.part-00000.parquet.crc": b"crc", "_temporary/0/part-00009.parquet": b"half",
            "date=2026-11-02/part-00001.parquet": b""}  # the last: an empty object, an aborted upload
    for name, data in junk.items():
        location.filesystem.create_dir(location.join(name.rsplit("/", 1)[0]) if "/" in name else location.path)
        with location.filesystem.open_output_stream(location.join(name)) as out:
            out.write(data)
    capsys.readouterr()
    manifest = main(job_args(f"{root}/in", f"{root}/out", endpoint))
    assert "input: 1 files without rows" in capsys.readouterr().err
    rows, written = read_output(f"{root}/out", endpoint)
    assert_output_contract(rows, written, ids, bad={})
    # The 0-byte file is a file of the table, with an empty part, so that the next night need not check it again.
    assert len(manifest["files"]) == 3 and LEASE_NAME not in files_under(f"{root}/out", endpoint)  # released


def positional_ids_tell_partition_folders_apart(main: Main, root: str, endpoint: str | None) -> None:
    """Files without an id column, of one name in two partition folders: ids are "<path under --input>:<row>"."""
    for folder in ("date=1", "date=2"):
        write_images(f"{root}/in/{folder}", endpoint, [f"{folder}-{i}" for i in range(ROWS_PER_FILE + 2)])  # 2 files each
        for name in ("part-00000.parquet", "part-00001.parquet"):
            drop_ids(f"{root}/in/{folder}/{name}", endpoint)
    manifest = main(job_args(f"{root}/in", f"{root}/out", endpoint))
    rows, _ = read_output(f"{root}/out", endpoint)
    expected = [f"{folder}/part-0000{n}.parquet:{row}" for folder in ("date=1", "date=2")
                for n, rows_in_file in enumerate((ROWS_PER_FILE, 2)) for row in range(rows_in_file)]
    assert_output_contract(rows, manifest, expected, bad={})  # 16 distinct ids, none lost to a shared file name


def concurrent_runs_into_one_prefix(main: Main, command: Sequence[str], root: str, endpoint: str | None, capsys) -> str:
    """A subprocess run holds the output's lease; a second run meanwhile (``S3A://`` for ``s3://``) is refused; the
    first finishes alone. Returns what the first printed (stdout and stderr)."""
    ids = [f"img-{i}" for i in range(24)]
    write_images(f"{root}/in", endpoint, ids)
    argv = job_args(f"{root}/in", f"{root}/out", endpoint)
    first = subprocess.Popen([sys.executable, "-m", *command, *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for_lease(first, f"{root}/out", endpoint)
        # The same prefix spelt as Hadoop users and upper-case schemes write it: the same lease.
        line = refused(main, job_args(f"{root}/in", re.sub(r"^s3://", "S3A://", f"{root}/out"), endpoint), capsys)
        output, _ = first.communicate(timeout=FIRST_RUN_TIMEOUT_S)
    finally:
        first.kill()
    assert first.returncode == 0, output[-3000:]
    assert re.fullmatch(rf"{re.escape(root)}/out/_lease\.json: another run is writing this output: run \S+ on \S+ "
                        rf"\(pid {first.pid}\) holds its lease until \S+Z \(\d+ s from now\) and is still running; wait "
                        r"for it to finish, or choose another --output", line), line
    rows, manifest = read_output(f"{root}/out", endpoint)
    assert f"run {manifest['run_id']} on " in line  # the holder named is the run that wrote the output
    assert_output_contract(rows, manifest, ids, bad={})  # every id once: no part written twice
    index, history = manifest["table"]["index"], f"_history/{manifest['run_id']}.json"
    assert sorted(files_under(f"{root}/out", endpoint)) == sorted([*manifest["files"], "_SUCCESS.json", *index_files([index]), history])
    return output


def wait_for_lease(job: subprocess.Popen, output_uri: str, endpoint: str | None) -> None:
    deadline = time.monotonic() + LEASE_TIMEOUT_S
    while LEASE_NAME not in files_under(output_uri, endpoint):
        assert job.poll() is None, f"the first run ended before taking its lease:\n{job.stdout.read()[-3000:]}"
        assert time.monotonic() < deadline, f"no lease after {LEASE_TIMEOUT_S} s"
        time.sleep(0.05)


def a_crashed_runs_lease_is_taken_over_by_resume(main: Main, root: str, endpoint: str | None, capsys) -> None:
    """A lease that stopped being renewed (its run crashed): refused without --resume, taken over with it."""
    ids = [f"img-{i}" for i in range(6)]
    write_images(f"{root}/in", endpoint, ids)
    write_expired_lease(resolve(f"{root}/out", endpoint), LeaseOwner("crashed-run", "host-9", 99))
    argv = job_args(f"{root}/in", f"{root}/out", endpoint)
    line = refused(main, argv, capsys)
    assert "run crashed-run on host-9 (pid 99) held this output's lease until" in line
    assert line.endswith("stopped renewing it (it crashed?); pass --resume to take over and finish its work")
    manifest = main([*argv, "--resume"])
    rows, written = read_output(f"{root}/out", endpoint)
    assert written == manifest and sorted(r["id"] for r in rows) == ids
    assert LEASE_NAME not in files_under(f"{root}/out", endpoint)


def write_expired_lease(output: Location, owner: LeaseOwner) -> None:
    now = time.time()
    record = LeaseRecord(owner, acquired_at=now - 900, expires_at=now - 600)
    assert create_exclusive(output, output.join(LEASE_NAME), record.to_bytes()) is not None
