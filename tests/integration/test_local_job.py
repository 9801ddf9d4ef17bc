"""The plain-PyTorch baseline end to end: DataLoader workers, real Parquet, real images, a real S3 server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import boto3
import pytest

from runners import local_job
from job.cli import run_main
from job import progress
from job.lease.lease import LeaseOwner, OutputLease
from job.sample.synthetic import synthetic_rows
from storage import resolve
from tests.common.contract import assert_output_contract, assert_progress_shown, assert_timeline, read_output
from tests.common.datasets import write_mixed
from tests.integration import checks_scenarios as checks
from tests.unit.test_layers import ROOT


def run(*argv: str) -> dict:
    return local_job.main(["--weights", "random", "--batch-size", "8", *argv])


def test_local_dir_meets_the_output_contract_and_workers_match_in_process(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(progress, "LOG_EVERY_SECONDS", 0.2)  # the display's log lines, at test speed
    ids, bad = write_mixed(str(tmp_path / "in"))  # 26 rows in 3 files
    # Batches of 2: enough model batches (13) for a steady rate (job.timeline.STEADY_MIN_EVENTS).
    manifest = run("--input", str(tmp_path / "in"), "--output", str(tmp_path / "workers"), "--workers", "2", "--batch-size", "2")
    rows, written = read_output(str(tmp_path / "workers"))
    assert written == manifest and manifest["engine"] == "local"
    assert_output_contract(rows, manifest, ids, bad)
    assert manifest["settings"]["local"] == {"workers": 2, "start_method": "spawn", "device": "cpu"}
    assert (manifest["execution"]["batch_size"], manifest["execution"]["compile"], manifest["execution"]["decode"]) == (2, False, "cpu")
    assert len(manifest["files"]) == 3  # one part per input file
    assert_timeline(manifest, steady_at_least_whole=True)  # 3 input files: start-up, then a full pipeline
    assert_progress_shown(capsys.readouterr().err, "local", len(ids))
    run("--input", str(tmp_path / "in"), "--output", str(tmp_path / "inline"), "--workers", "0")
    inline = {r["id"]: r for r in read_output(str(tmp_path / "inline"))[0]}
    for row in rows:
        assert (inline[row["id"]]["topk_labels"], inline[row["id"]]["error"]) == (row["topk_labels"], row["error"]), row["id"]


def test_s3_in_s3_out_meets_the_output_contract(s3_bucket, s3_env):
    ids, bad = write_mixed(f"s3://{s3_bucket}/images/", s3_env)
    manifest = run("--input", f"s3://{s3_bucket}/images/", "--output", f"s3://{s3_bucket}/preds/",
                   "--s3-endpoint-url", s3_env, "--workers", "1", "--limit", "23")
    rows, written = read_output(f"s3://{s3_bucket}/preds/", s3_env)
    assert written == manifest and manifest["settings"]["local"]["workers"] == 1
    kept = ids[:23]  # file order: 6 good, 15 odd, then the first 2 bad rows
    assert_output_contract(rows, manifest, kept, {i: reason for i, reason in bad.items() if i in kept})


def test_upper_case_and_s3a_schemes_are_the_s3_prefix_they_name(s3_bucket, s3_env, tmp_path, monkeypatch, capsys):
    """``S3://`` and ``s3a://`` name the ``s3://`` prefix: one lease, the data and the manifest on S3, nothing local."""
    monkeypatch.chdir(tmp_path)  # where a scheme taken for a local path would have written
    ids, bad = write_mixed(f"s3://{s3_bucket}/images/", s3_env)
    names = [f"class {i}" for i in range(1000)]  # random weights: ImageNet's 1000-class head
    boto3.client("s3", endpoint_url=s3_env).put_object(Bucket=s3_bucket, Key="names.txt", Body="\n".join(names).encode())
    argv = ["--weights", "random", "--workers", "0", "--input", f"S3://{s3_bucket}/images/", "--s3-endpoint-url", s3_env,
            "--labels", f"s3a://{s3_bucket}/names.txt"]
    held = OutputLease.acquire(resolve(f"s3://{s3_bucket}/preds", s3_env), LeaseOwner("other-run", "host-1", 4242))
    assert run_main(local_job.main, [*argv, "--output", f"S3://{s3_bucket}/preds/"]) == 2
    assert "run other-run on host-1 (pid 4242) holds its lease" in capsys.readouterr().err
    held.release()
    manifest = local_job.main([*argv, "--output", f"S3A://{s3_bucket}/preds/"])
    assert (manifest["output"], manifest["manifest"]) == (f"s3://{s3_bucket}/preds/", f"s3://{s3_bucket}/preds/_SUCCESS.json")
    assert (manifest["config"]["input"], manifest["config"]["labels"]) == (f"s3://{s3_bucket}/images/", f"s3://{s3_bucket}/names.txt")
    rows, _ = read_output(f"s3://{s3_bucket}/preds/", s3_env)
    assert_output_contract(rows, manifest, ids, bad, names=names)
    assert list(tmp_path.iterdir()) == []


def test_positional_ids_tell_partition_folders_apart(s3_bucket, s3_env):
    checks.positional_ids_tell_partition_folders_apart(local_job.main, f"s3://{s3_bucket}", s3_env)


def test_more_workers_than_files_start_only_one_per_file(tmp_path):
    write_mixed(str(tmp_path / "in"), rows_per_file=30)  # one file
    manifest = run("--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--workers", "4", "--limit", "3")
    assert manifest["settings"]["local"]["workers"] == 1 and manifest["counts"]["rows_out"] == 3


def test_without_workers_asked_a_small_input_runs_in_the_main_process_a_large_one_in_workers(tmp_path, monkeypatch):
    """A worker's start-up (a fresh interpreter's imports) is worth it only for an input of many rows."""
    from job.input.plan import InputFile, InputPlan

    write_mixed(str(tmp_path / "in"))  # 26 rows in 3 files
    manifest = run("--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"))
    assert manifest["settings"]["local"]["workers"] == 0 and manifest["counts"]["rows_out"] == 26
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    files = lambda rows: InputPlan(resolve(str(tmp_path)), tuple(InputFile(f"f{i}", rows) for i in range(3)), "id", "image",
                                    shape_columns=False)  # noqa: E731
    assert local_job.workers_for(files(local_job.WORKERS_FROM_ROWS // 3), None) == 0
    assert local_job.workers_for(files(local_job.WORKERS_FROM_ROWS), None) == 3  # 7 CPUs' worth, one a file
    assert local_job.workers_for(files(10), 2) == 2 and local_job.workers_for(files(10_000), 0) == 0  # as asked


def test_negative_workers_is_one_line_before_any_work(capsys):
    with pytest.raises(SystemExit) as stopped:
        run_main(local_job.main, ["--workers", "-1"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.count("\n") == 1 and "argument --workers: must be an integer >= 0, got -1" in err


@pytest.mark.parametrize("output", ["/sys/kernel", "/sys/streaming-batch-inference-out", "FILE/out"])
def test_an_output_this_user_may_not_write_is_one_line_before_any_work(tmp_path, capsys, output):
    """Real refusals that stop root too: sysfs takes no new files, and a file stands where a folder should be."""
    if output.startswith("/sys") and not os.path.isdir("/sys/kernel"):
        pytest.skip("needs Linux's /sys")
    write_mixed(str(tmp_path / "in"))
    (tmp_path / "FILE").write_text("not a folder")
    output = output.replace("FILE", str(tmp_path / "FILE"))
    assert run_main(local_job.main, ["--weights", "random", "--input", str(tmp_path / "in"), "--output", output]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {output}/_lease.json: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert "choose a" in err and "path" in err, err  # the fix, whichever errno this machine's /sys gives


def test_startup_counts_from_the_interpreter_not_from_what_ran_before_it(tmp_path):
    """Under ``bash -c "a && python -m ..."`` bash execs python in its own process: the process's fork
    time is when bash started, so the 4 s before the command must not be counted in the timeline."""
    write_mixed(str(tmp_path / "in"))
    command = (f"sleep 4 && exec {sys.executable} -m runners.local_job --weights random --workers 0 "
               f"--input {tmp_path / 'in'} --output {tmp_path / 'out'}")
    started = time.time()
    subprocess.run(["bash", "-c", command], check=True, capture_output=True, timeout=600)
    elapsed = time.time() - started
    timeline = read_output(str(tmp_path / "out"))[1]["timeline"]
    assert 0 < timeline["startup_seconds"] < timeline["wall_seconds"] < elapsed - 3.5, (timeline, elapsed)


def test_an_output_inside_or_above_another_jobs_output_is_refused_in_one_line(tmp_path, capsys):
    """A job's readers take its folder whole: another job's output inside it, or around it, is refused before any work."""
    write_mixed(str(tmp_path / "in"))
    finished = tmp_path / "out" / "nightly"
    run("--input", str(tmp_path / "in"), "--output", str(finished), "--workers", "0")
    argv = ["--weights", "random", "--input", str(tmp_path / "in"), "--workers", "0"]
    inside = checks.refused(local_job.main, [*argv, "--output", str(finished / "inner")], capsys)
    assert inside.startswith(f"--output {finished}/inner lies inside {finished}, which holds a finished job"), inside
    above = checks.refused(local_job.main, [*argv, "--output", str(tmp_path / "out")], capsys)
    assert above.startswith(f"--output {tmp_path}/out holds a finished job (_SUCCESS.json) at {finished}"), above
    assert not (finished / "inner").exists() and sorted(os.listdir(tmp_path / "out")) == ["nightly"]  # as they were


def _kill_workers_as_they_start(driver: subprocess.Popen, deadline_s: float) -> int:
    """SIGKILL each spawned worker of ``driver`` the moment it appears, as the kernel's OOM killer may; how many."""
    killed, deadline = set(), time.monotonic() + deadline_s
    while driver.poll() is None and time.monotonic() < deadline:
        for task in os.listdir(f"/proc/{driver.pid}/task") if os.path.exists(f"/proc/{driver.pid}/task") else []:
            try:
                with open(f"/proc/{driver.pid}/task/{task}/children") as f:
                    children = [int(pid) for pid in f.read().split()]
            except OSError:
                continue
            for pid in set(children) - killed:
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        if b"spawn_main" in f.read():
                            os.kill(pid, signal.SIGKILL)
                            killed.add(pid)
                except OSError:
                    continue
        time.sleep(0.005)
    return len(killed)


def test_a_worker_killed_as_it_starts_ends_the_run_in_one_line_and_frees_the_output(tmp_path):
    """The plan of 3,000 objects no longer rides the worker's start pipe, where a dead worker left the driver blocked."""
    (_, jpeg), = synthetic_rows(1, "jpeg", (32, 24), seed=5)
    for index in range(3000):
        path = tmp_path / "in" / f"folder-{index % 7}" / f"an-image-object-with-a-long-name-{index:05d}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(jpeg)
    argv = [sys.executable, "-m", "runners.local_job", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
            "--weights", "random", "--workers", "1", "--resize", "40", "--crop", "32"]
    with open(tmp_path / "stderr", "w") as err:
        driver = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        try:
            assert _kill_workers_as_they_start(driver, deadline_s=120) >= 1
            code = driver.wait(timeout=120)  # it hung here, renewing its lease, before
        finally:
            if driver.poll() is None:
                os.killpg(driver.pid, signal.SIGKILL)
    text = (tmp_path / "stderr").read_text()
    assert code == 4 and "Traceback" not in text, text  # stopped part-way: --resume finishes the run
    assert text.rstrip().splitlines()[-1].startswith("error: DataLoader worker (pid") and "--workers" in text, text
    assert not (tmp_path / "out" / "_lease.json").exists()  # the next night is not refused


def test_a_worker_stopped_while_it_hands_a_batch_over_exits_cleanly(tmp_path, capfd):
    """A run that stops reading (a Ctrl-C, a failed batch) stops its worker mid-hand-over: the next batch, decoded, is on
    its way to the queue, whose feeder thread moves the pixels into shared memory, then frees them once sent. A worker
    that exits without waiting for that thread finalises its interpreter while the thread is still in torch's C++, and
    aborts: every stop, with these batches, and stops under load with any."""
    import gc

    import torch

    from job.config import JobConfig
    from job.input.plan import InputFile, InputPlan
    from job.sample.synthetic import write_dataset
    from tests.common.plans import cpu_execution

    write_dataset(resolve(str(tmp_path / "in")), synthetic_rows(512, "jpeg", (64, 48), seed=3), rows_per_file=512)
    # Large batches (256 rows of 448x448) make the copy long, the worker's exit after its last hand-over short.
    config = JobConfig(input=str(tmp_path / "in"), output=None, weights="random", resize=448, crop=448, batch_size=256)
    (name,) = os.listdir(tmp_path / "in")
    plan = InputPlan(resolve(str(tmp_path / "in")), (InputFile(str(tmp_path / "in" / name), 512),), "id", "image", False)
    files = local_job.PlannedFiles(plan, config, cpu_execution(config), None)
    for _ in range(3):
        batches = iter(local_job.loader_for(files, 1, torch.multiprocessing.get_context("spawn"), pin_memory=False))
        batch, pixels = next(batches)  # the worker is decoding the second batch
        assert pixels.shape == (256, 448, 448, 3) and not any(batch.errors)
        del batches, batch, pixels  # stopped: the worker hands the second batch over, then exits
        gc.collect()
    err = capfd.readouterr().err
    assert "terminate called" not in err and "Aborted" not in err, err
