"""Every deploy file that installs torch pins a build its nodes' CUDA driver runs.

Unbounded, pip takes the newest torch, built for CUDA 13 since 2.11: on a node whose driver
runs CUDA 12, `torch.cuda.is_available()` is False and the GPU job runs on the CPU without
an error. Each file says what CUDA its nodes have (the image tag's -cuXYZ); the torch it pins
must be built for that major version, and no newer.
"""

from __future__ import annotations

import re
import shlex

import pytest
from anyscale.job.models import JobConfig
from anyscale.schedule.models import ScheduleConfig
from packaging.requirements import Requirement

from deploy_helpers import DEPLOY, load_yaml, tf_default

# The CUDA that torch's default Linux x86_64 wheel on PyPI is built for, read off each wheel's
# metadata (its nvidia-cuda-runtime-cu12 / cuda-toolkit requirement) on 2026-11-24 with
#   pip install --isolated --dry-run --ignore-installed --no-deps --report R.json --only-binary=:all: \
#     --python-version 3.11 --platform manylinux_2_28_x86_64 --target T torch==VERSION
TORCH_CUDA = {"2.8.0": (12, 8), "2.9.1": (12, 8), "2.10.0": (12, 8), "2.11.0": (13, 0)}
# torchvision's build for each torch (its Requires-Dist: torch==...), read the same way.
TORCHVISION_FOR = {"2.10.0": "0.25.0"}
IMAGE_CUDA = re.compile(r"-cu(\d+)(\d)$")  # anyscale/ray:...-cu128, rayproject/ray:...-cu128


def image_cuda(image: str) -> tuple[int, int]:
    found = IMAGE_CUDA.search(image)
    assert found, f"{image}: the tag must say its CUDA (-cuXYZ), so the torch it gets can be checked against it"
    return int(found.group(1)), int(found.group(2))


def pins(requirements: list[str]) -> dict[str, str]:
    """{name: exact version} of torch and torchvision; fails on a range (pip would take the newest)."""
    found = {}
    for line in requirements:
        req = Requirement(line)
        if req.name in ("torch", "torchvision"):
            exact = [s.version for s in req.specifier if s.operator == "=="]
            assert exact, f"{line}: pin an exact build (a range lets pip take the newest, CUDA 13)"
            found[req.name] = exact[0]
    return found


def ray_setup_requirements() -> list[str]:
    cluster = load_yaml("deploy/ray/cluster.yaml")
    tokens = [t for command in cluster["setup_commands"] for t in shlex.split(command)
              if not t.startswith(("-", "$")) and t not in ("pip", "install")]
    return tokens


def deploy_files() -> dict[str, tuple[list[str], str]]:
    """Each deploy file that installs torch: (its requirements, the image that says its CUDA)."""
    job = JobConfig.from_yaml(str(DEPLOY / "anyscale" / "job.yaml"))
    schedule = ScheduleConfig.from_yaml(str(DEPLOY / "anyscale" / "schedule.yaml")).job_config
    cluster = load_yaml("deploy/ray/cluster.yaml")
    return {
        "deploy/anyscale/job.yaml": (job.requirements, job.image_uri),
        "deploy/anyscale/schedule.yaml": (schedule.requirements, schedule.image_uri),
        "deploy/ray/cluster.yaml": (ray_setup_requirements(), cluster["docker"]["image"]),
    }


@pytest.mark.parametrize("where", list(deploy_files()))
def test_torch_is_a_build_the_nodes_cuda_runs(where):
    requirements, image = deploy_files()[where]
    pinned = pins(requirements)
    assert set(pinned) == {"torch", "torchvision"}, f"{where} installs {pinned}"
    torch = pinned["torch"]
    assert torch in TORCH_CUDA, f"{where}: torch {torch}'s CUDA is not recorded in TORCH_CUDA; read it off PyPI"
    built, nodes = TORCH_CUDA[torch], image_cuda(image)
    assert built[0] == nodes[0] and built <= nodes, f"{where}: torch {torch} is built for CUDA {built}; its nodes have {nodes}"
    assert pinned["torchvision"] == TORCHVISION_FOR.get(torch), f"{where}: torchvision {pinned['torchvision']} is not torch {torch}'s"


def test_every_deploy_file_pins_the_same_torch():
    assert len({pins(requirements)["torch"] for requirements, _ in deploy_files().values()}) == 1


def test_the_pin_check_refuses_what_pip_would_resolve_to_cuda_13():
    with pytest.raises(AssertionError, match="pin an exact build"):
        pins(["torch>=2.4"])
    assert TORCH_CUDA["2.11.0"][0] == 13  # the newest builds: a CUDA 12 node cannot run them


@pytest.mark.parametrize("where", ["bundle", "terraform"])
def test_databricks_installs_no_torch_of_its_own(where, tf):
    # A GPU ML runtime ships torch built for its own CUDA; the job adds only the project wheel
    # (whose torch>=2.4 the runtime's torch meets, so pip keeps it).
    if where == "bundle":
        job = load_yaml("deploy/databricks/databricks.yml")["resources"]["jobs"]["batch_inference_spark_nightly"]
        libraries, runtime = job["tasks"][0]["libraries"], job["job_clusters"][0]["new_cluster"]["spark_version"]
    else:
        task = tf["resource"]["databricks_job"]["nightly_spark"]["task"]
        libraries, runtime = task["library"], tf_default(tf, "databricks_spark_version")
    libraries = libraries if isinstance(libraries, list) else [libraries]
    assert [set(lib) for lib in libraries] == [{"whl"}], f"{where} installs {libraries}"
    assert "-gpu-ml-" in runtime
