"""job.sample.sample: the built-in sample lands where it is asked to, or is kept in the temp dir and reused."""

from __future__ import annotations

import os
import tempfile

import pyarrow.parquet as pq

from job.sample.sample import SAMPLE_IMAGES, write_sample


def test_the_sample_goes_under_the_given_directory(tmp_path):
    directory = str(tmp_path / "input")
    assert write_sample(directory) == directory
    ids = pq.read_table(directory).column("id").to_pylist()
    assert len(ids) == SAMPLE_IMAGES + 2 and ids[-2:] == ["bad-truncated-jpeg", "bad-not-an-image"]


def test_without_a_directory_it_is_written_once_and_reused(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # this test's own temp dir
    directory = write_sample()
    assert os.path.dirname(directory) == str(tmp_path) and os.path.basename(directory).startswith("sample-input-")
    assert pq.read_table(directory).num_rows == SAMPLE_IMAGES + 2
    written = {name: os.stat(os.path.join(directory, name)).st_mtime_ns for name in os.listdir(directory)}
    assert write_sample() == directory  # the second run reads what the first wrote
    assert {name: os.stat(os.path.join(directory, name)).st_mtime_ns for name in os.listdir(directory)} == written
    assert [name for name in os.listdir(tmp_path) if "staging" in name] == []
