"""A heterogeneous cluster on one machine: a CPU-only head and a node that declares one GPU.

Preprocessing must run on the CPU-only node and the predictor actors on the GPU node. The
driver plans the run on the GPU the cluster declares; this machine has none, so the predictor
is ``RayClassify`` with its model moved to the CPU (the job itself refuses a GPU plan where
CUDA is not usable). Ray still schedules it by the GPU the node declares. The manifest's
``placement`` says where each stage ran.
"""

from __future__ import annotations

import dataclasses

import psutil
import pytest
from ray.cluster_utils import Cluster

from job import driver
from job.errors import JobError
from runners import ray_job
from tests.common.contract import assert_output_contract, read_output
from tests.common.datasets import write_mixed
from tests.common.ray_standins import PredictorOnCpu


# The test moves a few MB through the object store: a small one each node, an eighth of what is free at most, so two
# nodes on one busy machine do not each reserve 30% of its memory (Ray's default), which it may not have.
OBJECT_STORE_BYTES = 256 * 1024**2
RAY_MIN_OBJECT_STORE_BYTES = 80 * 1024**2  # Ray refuses under 75 MB
# Ray's memory monitor kills workers when the machine's memory is 95% used, whoever uses it: on a busy machine,
# other processes' memory killed this test's workers. It checks placement, not memory: the kernel alone guards it.
NO_MEMORY_MONITOR = {"RAY_memory_monitor_refresh_ms": "0"}


def object_store_bytes() -> int:
    """Each test node's object store: ``OBJECT_STORE_BYTES``, or an eighth of the memory free now when that is less."""
    return max(RAY_MIN_OBJECT_STORE_BYTES, min(OBJECT_STORE_BYTES, psutil.virtual_memory().available // 8))


@pytest.fixture(scope="module")
def cluster():
    store = object_store_bytes()
    with pytest.MonkeyPatch.context() as patch:
        for name, value in NO_MEMORY_MONITOR.items():
            patch.setenv(name, value)  # read by each raylet as it starts
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "num_gpus": 0, "object_store_memory": store})
        cluster.add_node(num_cpus=1, num_gpus=1, object_store_memory=store)  # the "GPU node": one CPU for the predictor
        cluster.wait_for_nodes()
    yield cluster
    cluster.shutdown()


def test_preprocessing_on_cpu_node_and_predictor_on_gpu_node(cluster, tmp_path):
    import ray

    ids, bad = write_mixed(str(tmp_path / "in"))
    engine = dataclasses.replace(ray_job.ENGINE, execute=lambda job, session, args: ray_job.run_on_ray(job, session, args,
                                                                                                        PredictorOnCpu))
    argv = ["--input", str(tmp_path / "in"), "--weights", "random", "--batch-size", "8", "--precision", "fp32"]
    ray.init(address=cluster.address, logging_level="WARNING")
    try:
        # Up to two decoders: both fit on the head. Ray Data's own "SPREAD" placement put
        # one on the GPU node now and then, leaving the predictor pending behind it.
        manifest = driver.main(engine, [*argv, "--output", str(tmp_path / "out"), "--num-cpu-actors", "2"])
        # The job as it is: planned on the declared GPU, refused in one line where CUDA is not usable.
        with pytest.raises(JobError, match="^the run was planned on a GPU, but CUDA is not usable in this worker .*: "
                                           "install a torch built for this node's CUDA driver"):
            ray_job.main([*argv, "--output", str(tmp_path / "refused")])
    finally:
        ray.shutdown()
    rows, _ = read_output(str(tmp_path / "out"))
    assert_output_contract(rows, manifest, ids, bad)
    placement = manifest["settings"]["placement"]
    assert manifest["settings"]["scaling"]["gpus"] == 1 and manifest["settings"]["scaling"]["classify_actors"] == 1
    assert (manifest["execution"]["device"], manifest["execution"]["batch_size"]) == ("cuda", 8)
    assert placement["preprocess"] and all(node["node_gpus"] == 0 for node in placement["preprocess"])
    assert placement["classify"] and all(node["node_gpus"] == 1 for node in placement["classify"])
