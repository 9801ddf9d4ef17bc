"""The Ray job on a real local multi-node cluster whose GPU node comes late, or never.

A custom resource (``fake_gpu``, ``tests.common.standin_gpu_job``) stands for the GPU through the
same code that waits for GPUs and places predictors on them. The job runs as the user runs it:
its own process, joining the cluster by ``--address``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.common.contract import assert_output_contract, read_output
from tests.common.datasets import write_mixed
from benchmarks.harness.ray_cluster import LocalCluster

JOB_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def cluster():
    """A head with two CPUs (a CPU run's predictor and decoder); the stand-in GPU node joins (or not) per test."""
    with LocalCluster(head_cpus=2) as started:
        yield started


@pytest.fixture()
def gpu_node_type(cluster):
    """The cluster's autoscaler says a node type with the stand-in GPU can come (none will, here)."""
    cluster.report_node_types({"gpu-worker": ({"CPU": 2, "fake_gpu": 1}, 2), "cpu-worker": ({"CPU": 4}, 10)})
    yield
    cluster.report_node_types({})


def job(cluster: LocalCluster, *argv: str, address: bool = True) -> subprocess.CompletedProcess:
    env = {key: value for key, value in cluster.env.items() if key != "RAY_ADDRESS"}
    where = ["--address", cluster.address] if address else []
    return subprocess.run([sys.executable, "-m", "tests.common.standin_gpu_job", *where, "--weights", "random", *argv],
                          env=env, capture_output=True, text=True, timeout=JOB_TIMEOUT_S)


def test_gpus_that_never_come_stop_the_run_in_one_line_and_write_nothing(cluster, tmp_path):
    write_mixed(str(tmp_path / "in"), rows_per_file=4)
    began = time.monotonic()
    done = job(cluster, "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
               "--num-gpu-actors", "2", "--gpu-wait", "3")
    assert done.returncode == 2, done.stderr
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith("error: --num-gpu-actors 2: 0 x fake_gpu of 2 came within --gpu-wait 3 s ("), error
    assert "2 never did; nothing was run or written" in error
    assert f":{cluster.port} (1 node, 2 CPUs, 0 GPUs, 0 x fake_gpu)" in done.stderr
    assert "ray: waiting up to 3 s (--gpu-wait) for 2 x fake_gpu (--num-gpu-actors 2)" in done.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    assert time.monotonic() - began < 120


def test_without_address_a_new_local_ray_starts_beside_the_cluster(cluster, tmp_path):
    """No --address, no RAY_ADDRESS: never the cluster `ray start` runs here. A local Ray has no GPU
    node to wait for, so GPU actors asked there are refused at once."""
    done = job(cluster, "--output", str(tmp_path / "out"), "--num-gpu-actors", "1", address=False)
    assert done.returncode == 2, done.stderr
    started = [line for line in done.stderr.splitlines() if line.startswith("ray: ")]
    assert len(started) == 1 and started[0].startswith("ray: started a new local Ray at ") and f":{cluster.port} " not in started[0]
    assert done.stderr.strip().splitlines()[-1] == (
        "error: --num-gpu-actors 1: this machine's local Ray has 0 x fake_gpu, and no node can join it; "
        "pass --address of a cluster with GPUs, or drop --num-gpu-actors to run on CPU")


def test_a_gpu_node_type_that_never_comes_stops_a_run_that_named_no_count(cluster, gpu_node_type, tmp_path):
    """No --num-gpu-actors, no GPU up, but a node type can bring one: the run asks for one and waits, never CPU."""
    done = job(cluster, "--output", str(tmp_path / "out"), "--gpu-wait", "2")
    assert done.returncode == 2, done.stderr
    why = "no fake_gpu is up, and the cluster's node types can bring it: gpu-worker (1 fake_gpu a node, up to 2 nodes)"
    assert f"ray: waiting up to 2 s (--gpu-wait) for 1 x fake_gpu ({why}); the cluster has 0" in done.stderr
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith(f"error: {why}: 0 x fake_gpu of 1 came within --gpu-wait 2 s (1 node, 2 CPUs, "), error
    assert error.endswith("or pass --gpu-wait 0 to run on the nodes that are up"), error
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_without_node_types_a_run_that_named_no_count_runs_on_cpu_at_once(cluster, tmp_path):
    """A static cluster (no node types reported): no GPU up, none asked for, no wait; the run is on CPU."""
    done = job(cluster, "--output", str(tmp_path / "out"), "--gpu-wait", "600", "--arch", "resnet18", "--limit", "4",
               "--resize", "40", "--crop", "32")
    assert done.returncode == 0, done.stderr
    assert "waiting" not in done.stderr and "no GPU in the Ray cluster: the predictor runs on CPU" in done.stderr
    rows, manifest = read_output(str(tmp_path / "out"))
    assert rows and manifest["settings"]["scaling"]["gpus"] == 0


@pytest.mark.slow  # about 90 s on 2 cores: the node joins 20 s in, then a second node starts and the job runs
def test_the_run_waits_for_a_gpu_node_that_joins_late_and_predicts_there(cluster, tmp_path):
    ids, bad = write_mixed(str(tmp_path / "in"), rows_per_file=4)
    # The stand-in GPU node joins 20 s after the job started, as an autoscaled GPU worker does; its one CPU is the
    # predictor's, so the decoders stay on the head (CPU nodes), as on a cluster of CPU and GPU nodes.
    joins = threading.Timer(20.0, lambda: cluster.add_node(1, {"fake_gpu": 1}, wait=False))
    joins.start()
    try:
        done = job(cluster, "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
                   "--num-gpu-actors", "1", "--gpu-wait", "240")
    finally:
        joins.cancel()
    assert done.returncode == 0, done.stderr
    assert "ray: waiting up to 240 s (--gpu-wait) for 1 x fake_gpu (--num-gpu-actors 1); the cluster has 0" in done.stderr
    assert "ray: 1 x fake_gpu after " in done.stderr
    rows, manifest = read_output(str(tmp_path / "out"))
    assert_output_contract(rows, manifest, ids, bad)
    # Every predictor ran on the node that joined (the only one with the resource); decoders on the head.
    classify = manifest["settings"]["placement"]["classify"]
    assert [p["node_gpus"] for p in classify] == [1] and manifest["settings"]["scaling"]["gpus"] == 1
    assert all(p["node_gpus"] == 0 for p in manifest["settings"]["placement"]["preprocess"])
    assert manifest["settings"]["scaling"]["accelerator"] == "fake_gpu"
