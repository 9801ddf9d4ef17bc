"""The wheels for the serving image: found in the wheelhouse, else downloaded by real pip for the
image's Python and platform (here from a local find-links directory: no network)."""

from __future__ import annotations

import os
from importlib.metadata import version

import pytest

from job.errors import JobError
from runners.sagemaker import wheels
from tests.common.sagemaker import IMAGE_WHEEL_TAG, write_wheel

PYARROW = version("pyarrow")
SIMPLEJPEG = version("simplejpeg")
NO_INDEX = {"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_RETRIES": "0", "PIP_TIMEOUT": "2"}


def test_downloads_the_wheel_for_the_image_not_for_this_machine(tmp_path, monkeypatch):
    links = tmp_path / "links"
    write_wheel(links, "pyarrow", PYARROW, "cp311-cp311-manylinux_2_28_x86_64")  # this machine's
    write_wheel(links, "pyarrow", PYARROW, "cp312-cp312-manylinux_2_28_aarch64")  # wrong CPU
    write_wheel(links, "pyarrow", PYARROW, IMAGE_WHEEL_TAG)
    write_wheel(links, "simplejpeg", SIMPLEJPEG, IMAGE_WHEEL_TAG)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    found = wheels.fetch(str(tmp_path / "house"))
    assert sorted(p.name for p in found) == [f"pyarrow-{PYARROW}-{IMAGE_WHEEL_TAG}.whl", f"simplejpeg-{SIMPLEJPEG}-{IMAGE_WHEEL_TAG}.whl"]
    assert {p.parent for p in found} == {tmp_path / "house"}


def test_a_filled_wheelhouse_is_used_without_pip(tmp_path, monkeypatch):
    wheel = write_wheel(tmp_path, "pyarrow", PYARROW, IMAGE_WHEEL_TAG)
    jpeg = write_wheel(tmp_path, "simplejpeg", SIMPLEJPEG, IMAGE_WHEEL_TAG)
    write_wheel(tmp_path, "pyarrow", "1.0.0", IMAGE_WHEEL_TAG)  # another version: not this one
    for name, value in NO_INDEX.items():  # pip would fail: nothing to reach
        monkeypatch.setenv(name, value)
    assert sorted(wheels.fetch(str(tmp_path))) == sorted([wheel, jpeg])


def test_no_wheel_and_no_index_names_the_fix(tmp_path, monkeypatch):
    for name, value in NO_INDEX.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(JobError, match=r"could not download the serving wheels .*--wheelhouse DIR"):
        wheels.fetch(str(tmp_path))


def test_requirements_pin_the_wheels_and_ask_no_index():
    lines = wheels.requirements_txt([]).splitlines()
    assert "--no-index" in lines and f"--find-links {wheels.WHEELS_DIR}" in lines
    assert f"pyarrow=={PYARROW}" in lines and f"simplejpeg=={SIMPLEJPEG}" in lines
    assert not any(line.startswith(("-i", "--index-url", "--extra-index-url")) for line in lines)
    assert os.sep not in wheels.WHEELS_DIR  # relative to requirements.txt, wherever the model is unpacked
