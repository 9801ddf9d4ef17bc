"""python -m runners.make_dataset: the options reach job.sample.synthetic, and --from-folder writes files as they are."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from job.sample.synthetic import SyntheticSpec, write_synthetic
from runners import make_dataset
from job.cli import run_main
from storage import resolve
from tests.common.images import encoded, photo


def test_synthetic_images_are_those_of_the_library(tmp_path):
    argv = ["--output", str(tmp_path / "cli"), "--images", "5", "--size", "40x30", "--rows-per-file", "2",
            "--seed", "3", "--format", "png", "--workers", "2"]
    assert make_dataset.main(argv) == 5
    write_synthetic(resolve(str(tmp_path / "lib")), SyntheticSpec(5, "png", (40, 30), 3, 2), workers=1)
    assert pq.read_table(tmp_path / "cli").equals(pq.read_table(tmp_path / "lib"))


def test_from_folder_writes_the_files_as_they_are(tmp_path):
    folder = tmp_path / "photos"
    (folder / "sub").mkdir(parents=True)
    files = {"a.jpg": encoded(photo(seed=1)), "sub/b.png": encoded(photo(seed=2), "PNG"), "c.JPEG": encoded(photo(seed=3))}
    for name, data in files.items():
        (folder / name).write_bytes(data)
    (folder / "notes.txt").write_text("not an image")
    assert make_dataset.main(["--output", str(tmp_path / "out"), "--from-folder", str(folder), "--rows-per-file", "2"]) == 3
    table = pq.read_table(tmp_path / "out").to_pydict()
    assert dict(zip(table["id"], table["image"])) == files


def test_an_empty_folder_is_one_line_naming_the_option(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert run_main(make_dataset.main, ["--output", str(tmp_path / "out"), "--from-folder", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "no image files" in err and "--from-folder" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("option, value", [("--workers", "0"), ("--images", "0"), ("--rows-per-file", "-1"),
                                           ("--seed", "-1"), ("--workers", "two")])
def test_a_bad_number_is_refused_by_the_parser(tmp_path, capsys, option, value):
    with pytest.raises(SystemExit) as exit_:
        make_dataset.main(["--output", str(tmp_path), option, value])
    assert exit_.value.code == 2 and option in capsys.readouterr().err


def test_a_missing_bucket_is_one_line_naming_the_option_and_no_option_we_lack(s3_env, capsys):
    """pyarrow's own message suggests an "allow_bucket_creation option" the command does not have."""
    argv = ["--output", "s3://no-such-bucket-f22/images/", "--images", "2", "--s3-endpoint-url", s3_env]
    assert run_main(make_dataset.main, argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.splitlines()) == 1
    assert "'no-such-bucket-f22' does not exist" in err and "--output" in err and "allow_bucket_creation" not in err


def test_storage_errors_drop_pyarrow_advice_about_its_own_options():
    from storage.errors import explain

    error = explain("s3://b/x", OSError("Bucket 'b' not found. To create buckets, enable the allow_bucket_creation option."))
    assert "allow_bucket_creation" not in str(error) and "the bucket does not exist" in str(error)
