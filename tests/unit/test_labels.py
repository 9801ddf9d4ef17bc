"""Class names: labels files (local and S3), torchvision's ImageNet list, and refusals of bad lists."""

from __future__ import annotations

import json
import subprocess
import sys

import boto3
import pytest

from inference import WeightsError
from inference.labels import check_names, imagenet_names, labels_from_file, names_sha256


def test_imagenet_names_are_torchvisions_and_read_without_importing_it():
    from torchvision.models import ResNet50_Weights

    assert list(imagenet_names()) == ResNet50_Weights.DEFAULT.meta["categories"]
    code = "import sys; from inference.labels import imagenet_names; imagenet_names(); print(sorted({'torch', 'torchvision'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("text", ["cat\ndog\r\n bird \n\n", '["cat", "dog", "bird"]', "\ufeffcat\ndog\nbird"])
def test_a_labels_file_is_one_name_per_line_or_a_json_list(tmp_path, text):
    (tmp_path / "labels.txt").write_text(text, encoding="utf-8")
    assert labels_from_file(str(tmp_path / "labels.txt")) == ("cat", "dog", "bird")


def test_a_labels_file_on_s3(s3_bucket, s3_env):
    boto3.client("s3", endpoint_url=s3_env).put_object(Bucket=s3_bucket, Key="meta/labels.json", Body=json.dumps(["a", "b"]))
    assert labels_from_file(f"s3://{s3_bucket}/meta/labels.json", s3_env) == ("a", "b")
    with pytest.raises(WeightsError, match=f"cannot read labels s3://{s3_bucket}/meta/nope.txt: .*pass --labels"):
        labels_from_file(f"s3://{s3_bucket}/meta/nope.txt", s3_env)


@pytest.mark.parametrize("content, refusal", [
    (b'{"0": "cat"}', "expected a JSON list of strings, found a JSON dict"),
    (b'["cat", 3]', "expected a JSON list of strings, found 3 in the list"),
    (b'["cat",', "not valid JSON"),
    (b"\xff\xfecat", "not UTF-8 text"),
])
def test_unreadable_labels_files_are_refused(tmp_path, content, refusal):
    (tmp_path / "labels").write_bytes(content)
    with pytest.raises(WeightsError, match=refusal):
        labels_from_file(str(tmp_path / "labels"))


@pytest.mark.parametrize("names, refusal", [
    (["cat", "dog", "cat"], "'cat' is both name 0 and name 2; names must be distinct"),
    (["cat", "", "dog"], "name 1 is ''; every class needs a non-empty name"),
    (["cat", "  ", "dog"], "name 1 is '  '"),
    (["cat", "dog"], "2 names for a model with 3 classes"),
    ("cat", "expected a list of strings, found str"),
    (["cat", None, "dog"], "name 1 is None"),
])
def test_bad_name_lists_are_refused_naming_the_problem(names, refusal):
    with pytest.raises(WeightsError, match=refusal):
        check_names(names, 3, "labels x.txt")


def test_the_names_hash_depends_on_the_names_and_their_order_only():
    assert names_sha256(["a", "b"]) == names_sha256(("a", "b")) != names_sha256(["b", "a"])
