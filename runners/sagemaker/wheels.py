"""The wheels the serving image lacks, built for its Python, shipped inside model.tar.gz.

Use before packaging for AWS. The model runs with network isolation, so the toolkit's
start-up ``pip install -r code/requirements.txt`` must find everything in the archive:
``fetch`` fills a wheelhouse (once; later runs reuse it) with ``pip download`` for the
image's CPython and platform, not this machine's, and ``requirements_txt`` installs exactly
those files with no index. ``--local`` needs none of this: it runs in this environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from packaging.tags import cpython_tags
from packaging.utils import canonicalize_name, parse_wheel_filename

from job.errors import JobError
from runners.sagemaker.container import PYTHON_VERSION, WHEEL_PLATFORMS

# What the PyTorch inference image lacks: it has torch, torchvision, numpy, pillow and OpenCV (opencv-python, whose
# cv2 is the one our opencv-python-headless provides; the 2.6.0 image's Dockerfiles install it beside numpy 2), not
# pyarrow nor simplejpeg, which the default CPU path (--cpu-resize fast) decodes JPEGs with.
SERVING_PACKAGES = ("pyarrow", "simplejpeg")
WHEELS_DIR = "wheels"  # code/wheels/ inside the archive
DEFAULT_WHEELHOUSE = os.path.join(os.path.expanduser("~"), ".cache", "streaming-batch-inference", "sagemaker-wheels")
_TARGET_TAGS = frozenset(cpython_tags(python_version=tuple(map(int, PYTHON_VERSION.split("."))), platforms=WHEEL_PLATFORMS))


def pins() -> list[str]:
    """``name==version`` of each serving package: the version this machine runs and tests."""
    return [f"{name}=={version(name)}" for name in SERVING_PACKAGES]


def fetch(wheelhouse: str = DEFAULT_WHEELHOUSE) -> list[Path]:
    """One wheel per serving package for the image, from ``wheelhouse`` or downloaded into it."""
    found = _wheels_in(Path(wheelhouse))
    if len(found) < len(SERVING_PACKAGES):
        _download(wheelhouse)
        found = _wheels_in(Path(wheelhouse))
    if len(found) < len(SERVING_PACKAGES):
        raise JobError(f"pip downloaded no wheel of {' '.join(pins())} for CPython {PYTHON_VERSION} "
                       f"({WHEEL_PLATFORMS[0]}) into {wheelhouse}; put one there by hand")
    return found


def requirements_txt(wheels: list[Path]) -> str:
    """code/requirements.txt: install the shipped wheels, and never ask an index."""
    lines = ["# Installed by the SageMaker toolkit at start-up. No index: the model has no network.",
             "--no-index", f"--find-links {WHEELS_DIR}"]  # pip reads it relative to this file
    return "\n".join(lines + pins()) + "\n"


def _wheels_in(wheelhouse: Path) -> list[Path]:
    wanted = {canonicalize_name(p.split("==")[0]): p.split("==")[1] for p in pins()}
    found = {}
    for path in sorted(wheelhouse.glob("*.whl")):
        name, ver, _, tags = parse_wheel_filename(path.name)
        if wanted.get(name) == str(ver) and tags & _TARGET_TAGS:
            found[name] = path
    return list(found.values())


def _download(wheelhouse: str) -> None:
    platforms = [arg for platform in WHEEL_PLATFORMS for arg in ("--platform", platform)]
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
               "--implementation", "cp", "--python-version", PYTHON_VERSION, *platforms,
               "--dest", wheelhouse, *pins()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise JobError(f"could not download the serving wheels ({why}); the SageMaker model has no network, "
                       f"so they travel in model.tar.gz: run `{' '.join(command[2:])}` where an index is "
                       f"reachable and pass --wheelhouse DIR")
