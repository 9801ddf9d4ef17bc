"""A driver killed part-way keeps its committed parts, and ``--resume`` finishes the job.

The job runs as a real subprocess (``python -m runners.ray_job`` / ``runners.spark_job``) in
its own session; once a part is committed, it gets SIGKILL: on Ray the driver alone (what the
OOM killer does), and no process it started may outlive it for long (``job.lease.reaper``); on Spark
the whole process group (driver, JVM, workers). No manifest may exist then, and every part
present must hold its whole input file. The killed run leaves its output lease behind
(``job.lease.lease``), but its process is provably gone on this host: ``--resume``, run at once,
takes the lease over, skips the committed files (their parts are not rewritten) and ends with
exactly one row per id.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pyarrow.parquet as pq
import pytest

from job.lease.lease import LEASE_NAME
from job.night.manifest import MANIFEST
from job.output.parts import STAGING, read_part_record
from job.night.held import list_parts
from runners import make_dataset, ray_job, spark_job
from job.cli import run_main
from storage import resolve
from tests.common.contract import assert_output_contract, read_output
from benchmarks.harness.processes import still_running

FILES, ROWS_PER_FILE = 12, 3  # enough files that the kill lands with most of them still to run
FIRST_PART_TIMEOUT_S = 300  # a loaded 2-core machine starts Ray and loads the model slowly
KILL_ATTEMPTS = 5  # tries at killing the driver mid-run: a busy machine may let it finish between the look and the kill
SURVIVOR_TIMEOUT_S = 15  # Ray's workers end once their raylet is gone; its agents, left alone, linger about 60 s
ENGINES = {
    "ray": (ray_job.main, ["--address", "local"]),  # its own Ray, never a cluster someone else started
    "spark": (spark_job.main, ["--master", "local[2,2]"]),
}


@pytest.fixture()
def images(tmp_path) -> tuple[Path, list[str]]:
    make_dataset.main(["--output", str(tmp_path / "in"), "--images", str(FILES * ROWS_PER_FILE),
                       "--rows-per-file", str(ROWS_PER_FILE), "--size", "64x48"])
    ids = pq.read_table(tmp_path / "in", columns=["id"]).column("id").to_pylist()
    return tmp_path / "in", ids


def killed_mid_run(engine: str, argv: list[str], out: Path, log: Path) -> int:
    """``kill_after_first_part`` until the kill lands mid-run (a part committed, not all, no manifest); the driver's pid.

    On a busy machine the driver may commit its last parts, or finish, between the part seen and the kill:
    that try tests nothing, so the output is cleared and the job started again.
    """
    for _ in range(KILL_ATTEMPTS):
        killed = kill_after_first_part(engine, argv, out, log)
        if killed is not None and not (out / MANIFEST).exists() and len(list_parts(resolve(str(out)))) < FILES:
            return killed
        shutil.rmtree(out, ignore_errors=True)
    pytest.fail(f"the driver finished its {FILES} files before the kill on each of {KILL_ATTEMPTS} tries")


def kill_after_first_part(engine: str, argv: list[str], out: Path, log: Path) -> int | None:
    """Start the job in its own session; SIGKILL it once a part is committed (see the module docstring); returns the
    driver's pid, or None when it finished before the kill."""
    with open(log, "w") as sink:
        job = subprocess.Popen([sys.executable, "-m", f"runners.{engine}_job", *argv], start_new_session=True,
                               stdout=sink, stderr=subprocess.STDOUT)
    deadline, started = time.monotonic() + FIRST_PART_TIMEOUT_S, []
    try:
        while not (out.exists() and list_parts(resolve(str(out)))):
            if job.poll() is not None:
                assert job.returncode == 0, f"the job ended before committing a part:\n{log.read_text()[-3000:]}"
                return None  # it finished between two looks
            assert time.monotonic() < deadline, f"no part after {FIRST_PART_TIMEOUT_S} s:\n{log.read_text()[-3000:]}"
            time.sleep(0.05)
        try:
            started = psutil.Process(job.pid).children(recursive=True)  # its local Ray: daemons, agents, workers
        except psutil.NoSuchProcess:
            pass  # it has just ended: the kill below finds it gone too
    finally:
        finished = not _sigkill(job.pid, group=engine != "ray")  # Ray: the driver alone, its local Ray must not outlive it
        job.wait()
    survivors = still_running(started, SURVIVOR_TIMEOUT_S)
    assert not survivors, f"still running {SURVIVOR_TIMEOUT_S} s after the driver was killed: {survivors}"
    return None if finished or job.returncode != -signal.SIGKILL else job.pid


def _sigkill(pid: int, group: bool) -> bool:
    """SIGKILL ``pid`` (or its process group); False when it was gone already."""
    try:
        os.killpg(pid, signal.SIGKILL) if group else os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


def assert_parts_whole(out: Path, source: Path) -> dict[str, int]:
    """Every part holds exactly the ids of its input file; returns {part: mtime_ns}."""
    stamps = {}
    for name in list_parts(resolve(str(out))):
        rows, record = read_part_record(resolve(str(out)), name)
        expected = pq.read_table(source / record["input_file"], columns=["id"]).column("id").to_pylist()
        assert pq.read_table(out / name).column("id").to_pylist() == expected and rows == ROWS_PER_FILE, name
        stamps[name] = (out / name).stat().st_mtime_ns
    assert set(os.listdir(out)) - {STAGING, LEASE_NAME} == set(stamps)  # nothing half-written beside them
    return stamps


# CI: a child SIGKILLed mid-night on the local engine, then finished by the next (tests/integration/test_rollout.py);
# the parts a killed driver leaves are read back by the driver whatever the engine
@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
def test_a_killed_driver_resumes_to_exactly_one_row_per_id(engine, images, tmp_path, capsys):
    source, ids = images
    main, engine_args = ENGINES[engine]
    argv = ["--input", str(source), "--output", str(tmp_path / "out"), "--weights", "random", "--batch-size", "8", *engine_args]
    killed = killed_mid_run(engine, argv, tmp_path / "out", tmp_path / "killed.log")
    assert not (tmp_path / "out" / MANIFEST).exists()
    kept = assert_parts_whole(tmp_path / "out", source)
    assert 1 <= len(kept) < FILES, f"the kill should land mid-run: {len(kept)} of {FILES} parts"

    # At once: the lease names a process of this host that is gone, so it is taken over without waiting for it to expire.
    resumed = subprocess.run([sys.executable, "-m", f"runners.{engine}_job", *argv, "--resume"], capture_output=True, text=True,
                             timeout=FIRST_PART_TIMEOUT_S * 2)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"(pid {killed}) is no longer running (its pid is gone or reused): taking over its lease" in resumed.stderr

    rows, manifest = read_output(str(tmp_path / "out"))
    assert_output_contract(rows, manifest, ids, bad={})
    run = FILES - len(kept)
    assert manifest["input_files"] == {"total": FILES, "resumed": len(kept), "run": run, "rows_run": run * ROWS_PER_FILE}
    assert {name: (tmp_path / "out" / name).stat().st_mtime_ns for name in kept} == kept  # skipped, not rewritten
    assert f"after keeping {len(kept)} of {FILES} input files as earlier runs left them" in resumed.stdout
    runs = {row["run_id"] for row in rows}  # the killed run's rows keep its id, and its record is in _history/
    assert len(runs) == 2 and all((tmp_path / "out" / "_history" / f"{run}.json").exists() for run in runs), runs
    stopped = json.loads((tmp_path / "out" / "_history" / f"{(runs - {manifest['run_id']}).pop()}.json").read_text())
    assert stopped["finished"] is False and stopped["adopted_by"] == manifest["run_id"] and sorted(stopped["parts"]) == sorted(kept)

    assert run_main(main, [*argv, "--resume"]) == 0  # finished: nothing to do, and it says so
    assert "already holds a finished job (_SUCCESS.json); nothing to do" in capsys.readouterr().err
    assert not (tmp_path / "out" / LEASE_NAME).exists()  # released by the finished run, and by the no-op one
