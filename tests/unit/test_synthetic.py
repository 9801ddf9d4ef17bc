"""job.sample.synthetic: the same dataset for a seed whatever the process count, locally and on S3."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from job.errors import JobError
from job.sample.synthetic import RAW_SHAPE, ROW_GROUP_ROWS, SyntheticSpec, write_synthetic
from storage import StorageError, resolve

SMALL = SyntheticSpec(images=10, size=(64, 48), seed=7, rows_per_file=3)


def written(uri: str, endpoint: str | None = None) -> dict[str, list]:
    location = resolve(uri, endpoint)
    table = pq.read_table(location.path, filesystem=location.filesystem)
    return table.to_pydict()


def files_of(directory) -> list[int]:
    return [pq.ParquetFile(path).metadata.num_rows for path in sorted(directory.glob("part-*.parquet"))]


def test_the_same_images_come_out_whatever_the_worker_count(tmp_path):
    assert write_synthetic(resolve(str(tmp_path / "one")), SMALL, workers=1) == 10
    assert write_synthetic(resolve(str(tmp_path / "two")), SMALL, workers=2) == 10
    one, two = written(str(tmp_path / "one")), written(str(tmp_path / "two"))
    assert one["id"] == [f"img-{i:08d}" for i in range(10)]
    assert two == one
    assert len(set(one["image"])) == 10
    assert files_of(tmp_path / "two") == [3, 3, 3, 1]


def test_a_file_does_not_depend_on_the_files_after_it(tmp_path):
    longer = SyntheticSpec(images=7, size=SMALL.size, seed=SMALL.seed, rows_per_file=SMALL.rows_per_file)
    write_synthetic(resolve(str(tmp_path / "short")), longer, workers=1)
    write_synthetic(resolve(str(tmp_path / "long")), SMALL, workers=1)
    short, long = written(str(tmp_path / "short")), written(str(tmp_path / "long"))
    assert short["image"][:6] == long["image"][:6]  # files 0 and 1 are whole in both


def test_another_seed_gives_other_images(tmp_path):
    other = SyntheticSpec(images=3, size=SMALL.size, seed=SMALL.seed + 1, rows_per_file=3)
    write_synthetic(resolve(str(tmp_path / "a")), other, workers=1)
    write_synthetic(resolve(str(tmp_path / "b")), SMALL, workers=1)
    assert set(written(str(tmp_path / "a"))["image"]).isdisjoint(written(str(tmp_path / "b"))["image"][:3])


def test_raw_cells_are_pixels_with_their_shape_in_small_row_groups(tmp_path):
    spec = SyntheticSpec(images=ROW_GROUP_ROWS + 6, fmt="raw", rows_per_file=ROW_GROUP_ROWS + 6)
    write_synthetic(resolve(str(tmp_path)), spec, workers=1)
    table = written(str(tmp_path))
    assert {len(cell) for cell in table["image"]} == {RAW_SHAPE[0] * RAW_SHAPE[1] * RAW_SHAPE[2]}
    assert (table["height"][0], table["width"][0], table["channels"][0]) == RAW_SHAPE
    metadata = pq.ParquetFile(tmp_path / "part-00000.parquet").metadata
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [ROW_GROUP_ROWS, 6]


@pytest.mark.parametrize("fmt, magic", [("jpeg", b"\xff\xd8"), ("png", b"\x89PNG"), ("webp", b"RIFF")])
def test_encoded_formats(tmp_path, fmt, magic):
    write_synthetic(resolve(str(tmp_path)), SyntheticSpec(images=2, fmt=fmt, size=(32, 24)), workers=1)
    assert all(cell.startswith(magic) for cell in written(str(tmp_path))["image"])


def test_worker_processes_write_to_s3(s3_bucket, s3_env, tmp_path):
    uri = f"s3://{s3_bucket}/images/"
    write_synthetic(resolve(uri, s3_env), SMALL, workers=2)
    write_synthetic(resolve(str(tmp_path)), SMALL, workers=1)
    assert written(uri, s3_env) == written(str(tmp_path))


def test_a_file_that_cannot_be_written_fails_the_whole_write(tmp_path):
    (tmp_path / "taken").write_text("a file where the output directory should be")
    with pytest.raises(StorageError, match="taken"):
        write_synthetic(resolve(str(tmp_path / "taken")), SMALL, workers=2)


@pytest.mark.parametrize("options, named", [
    ({"images": 0}, "images=0"),
    ({"images": 1, "rows_per_file": 0}, "rows_per_file=0"),
    ({"images": 1, "fmt": "gif"}, "'gif'"),
    ({"images": 1, "seed": -1}, "seed=-1"),
])
def test_a_bad_spec_is_refused_naming_the_value(options, named):
    with pytest.raises(JobError, match=named):
        SyntheticSpec(**options)


def test_no_workers_is_refused(tmp_path):
    with pytest.raises(JobError, match="workers=0"):
        write_synthetic(resolve(str(tmp_path)), SMALL, workers=0)
