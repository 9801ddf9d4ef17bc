"""job.sample.sample: the built-in sample lands where it is asked to, or in a new temp dir of its own."""

from __future__ import annotations

import os
import shutil
import tempfile

import pyarrow.parquet as pq

from job.sample.sample import SAMPLE_IMAGES, write_sample


def test_the_sample_goes_under_the_given_directory(tmp_path):
    directory = str(tmp_path / "input")
    assert write_sample(directory) == directory
    ids = pq.read_table(directory).column("id").to_pylist()
    assert len(ids) == SAMPLE_IMAGES + 2 and ids[-2:] == ["bad-truncated-jpeg", "bad-not-an-image"]


def test_without_a_directory_it_makes_its_own_temp_dir():
    directory = write_sample()
    try:
        assert os.path.dirname(directory) == tempfile.gettempdir()
        assert os.path.basename(directory).startswith("sample-input-")
        assert pq.read_table(directory).num_rows == SAMPLE_IMAGES + 2
    finally:
        shutil.rmtree(directory)
