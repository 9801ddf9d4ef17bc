"""A worker node lost whole mid-run on a real multi-node local Ray cluster: every row comes out once.

The cluster (``benchmarks.harness.ray_cluster``): a head that runs no work and two worker nodes, each
with 2 CPUs and one ``fake_gpu`` (the stand-in GPU of ``tests.common.standin_gpu_job``). The job's
three actors, one predictor (a CPU and the ``fake_gpu``) and two decoders (a CPU each), cannot
fit on one node, so they spread over both, whatever Ray's scheduler prefers. The job runs as the user runs it, its own process joining by
``--address``; once its first part is committed, one worker node is killed whole (its raylet,
object store and every actor on it, by pid) and the job must end on its own, no restart, with
every row exactly once and the manifest saying what was lost and redone.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from job.sample.synthetic import write_dataset
from storage import resolve
from tests.common.contract import assert_output_contract, read_output
from tests.common.datasets import BAD_REASONS, mixed_rows
from benchmarks.harness.ray_cluster import LocalCluster

pytestmark = pytest.mark.slow

JOB_TIMEOUT_S = 420  # the whole run on a loaded 2-core machine: start-up, the kill, Ray's recovery
FIRST_PART_TIMEOUT_S = 240  # from the job's start to its first committed part
# With 2 rows a file: 30 files, a second each for a decoder (SlowDecoder), 2 decoders: decoding lasts
# about 15 s past the predictor's start (its model load), so the kill finds both stages at work.
GOOD_IMAGES = 46
WORKER = (2, {"fake_gpu": 1})  # CPUs and resources of every worker node, the replacement's too
PREDICTOR, DECODER = "MapBatches(RayClassify)", "MapBatches(SlowDecoder)"  # the actors' process titles


@pytest.fixture()
def cluster():
    """A fresh cluster per test (each loses a node): a head with no CPU, two workers of WORKER."""
    with LocalCluster(head_cpus=0) as started:
        for _ in range(2):
            started.add_node(*WORKER)
        yield started


def write_input(root: Path) -> tuple[list[str], dict[str, str]]:
    """The mixed dataset with more good images, 2 rows a file: many small units of work."""
    rows = mixed_rows(good=GOOD_IMAGES)
    write_dataset(resolve(str(root)), iter(rows), rows_per_file=2)
    return [i for i, _ in rows], {f"bad-{name}": reason for name, reason in BAD_REASONS.items()}


def start_job(cluster: LocalCluster, data: Path, out: Path) -> subprocess.Popen:
    env = {key: value for key, value in cluster.env.items() if key != "RAY_ADDRESS"} | {"STANDIN_SLOW_DECODERS": "1"}
    argv = ["--address", cluster.address, "--weights", "random", "--input", str(data), "--output", str(out),
            "--num-gpu-actors", "1", "--gpu-wait", "60", "--num-cpu-actors", "2", "--batch-size", "2",
            "--resize", "40", "--crop", "32"]
    return subprocess.Popen([sys.executable, "-m", "tests.common.standin_gpu_job", *argv], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_first_part(job: subprocess.Popen, out: Path) -> None:
    """Until a part is committed (work has started and some is done), or fail naming why."""
    deadline = time.monotonic() + FIRST_PART_TIMEOUT_S
    while not list(out.glob("part-*.parquet")):
        if job.poll() is not None:
            pytest.fail(f"the job ended before its first part: {job.communicate()[1][-3000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"no part committed within {FIRST_PART_TIMEOUT_S} s")
        time.sleep(0.2)


def run_and_lose(cluster: LocalCluster, tmp_path: Path, victim: str) -> dict:
    """Run the job, kill the worker node ``victim`` names (``predictor``, or the other: ``decoders``) after
    the first part, a replacement joins; the job's output holds every row once. Returns its manifest."""
    ids, bad = write_input(tmp_path / "in")
    job = start_job(cluster, tmp_path / "in", tmp_path / "out")
    try:
        wait_first_part(job, tmp_path / "out")
        workers = cluster.nodes[1:]
        with_predictor = [node for node in workers if node.runs(PREDICTOR)]
        assert len(with_predictor) == 1, "the predictor should run on one worker node"
        others = [node for node in workers if node not in with_predictor]
        assert all(node.runs(DECODER) for node in others), "a decoder should run beside the predictor's node"
        lost = with_predictor[0] if victim == "predictor" else others[0]
        lost.kill()
        cluster.add_node(*WORKER, wait=False)  # the replacement; the job must not wait for it to start
        _, stderr = job.communicate(timeout=JOB_TIMEOUT_S)
    finally:
        if job.poll() is None:  # a failed assertion or a hung job: the driver goes too (the cluster's fixture kills the rest)
            job.kill()
            job.communicate()
    assert job.returncode == 0, stderr[-4000:]
    rows, manifest = read_output(str(tmp_path / "out"))
    assert_output_contract(rows, manifest, ids, bad)
    recovery = manifest["settings"]["recovery"]
    assert len(recovery["nodes_lost"]) == 1, recovery
    return manifest


def test_a_decoder_node_lost_mid_run_loses_no_row(cluster, tmp_path):
    manifest = run_and_lose(cluster, tmp_path, "decoders")
    print(manifest["settings"]["recovery"], manifest["settings"]["placement"])
    lost = manifest["settings"]["recovery"]["actors_lost"]
    assert lost["preprocess"] >= 1 and lost["classify"] == 0, lost


def test_the_predictor_node_lost_mid_run_loses_no_row(cluster, tmp_path):
    manifest = run_and_lose(cluster, tmp_path, "predictor")
    print(manifest["settings"]["recovery"], manifest["settings"]["placement"])
    assert manifest["settings"]["recovery"]["actors_lost"]["classify"] == 1
    # The predictor came back: a second one was started, on a node still alive at the end.
    classify = manifest["settings"]["placement"]["classify"]
    assert sum(p["actors"] for p in classify) == 2, classify
