"""URI resolution and S3 configuration problems answered in one line."""

from __future__ import annotations

import os
import re

import pyarrow.fs as pafs
import pytest

from storage import Location, StorageError, has_credentials, normalise, resolve, within
from storage.conditional import create_exclusive
from storage.errors import _LOCAL_HINTS, storage_errors
from storage.resolve import s3_endpoint


def test_local_paths_and_file_uris(tmp_path):
    assert resolve(str(tmp_path)).path == str(tmp_path)
    location = resolve(f"file://{tmp_path}/sub/")
    assert isinstance(location.filesystem, pafs.LocalFileSystem) and location.path == f"{tmp_path}/sub"


@pytest.mark.parametrize("written", ["S3://Bucket-x/Key/A", "s3a://Bucket-x/Key/A", "S3N://Bucket-x/Key/A"])
def test_s3_spellings_resolve_to_one_s3_uri_and_keep_bucket_and_key(written):
    assert normalise(written) == "s3://Bucket-x/Key/A"


def test_upper_case_and_s3a_uris_resolve_on_s3(s3_env, s3_bucket):
    for written in (f"S3://{s3_bucket}/x/", f"s3a://{s3_bucket}/x", f"S3A://{s3_bucket}/x"):
        location = resolve(written, s3_env)
        assert (location.uri.rstrip("/"), location.path, location.is_s3) == (f"s3://{s3_bucket}/x", f"{s3_bucket}/x", True), written
        assert location.uri_of(location.join("_lease.json")) == f"s3://{s3_bucket}/x/_lease.json"
    assert within(f"S3://{s3_bucket}/x/y", f"s3a://{s3_bucket}/x") and has_credentials("S3A://KEY:secret@bucket/x")


def test_a_location_made_with_an_upper_case_scheme_writes_to_s3_and_nothing_local(s3_env, s3_bucket, tmp_path, monkeypatch):
    """However a Location is made, its scheme is spelt once: an ``S3://`` one never passes for a local path."""
    monkeypatch.chdir(tmp_path)  # where a path taken for a local one would make a folder named after the bucket
    resolved = resolve(f"s3://{s3_bucket}/out", s3_env)
    location = Location(resolved.filesystem, resolved.path, f"S3://{s3_bucket}/out")
    with location.writer(location.join("sub", "a.txt")) as out:
        out.write(b"x")
    assert (location.is_s3, location.uri_of(location.join("a"))) == (True, f"s3://{s3_bucket}/out/a")
    assert resolved.filesystem.get_file_info(f"{s3_bucket}/out/sub/a.txt").size == 1
    assert list(tmp_path.iterdir()) == []


def test_schemes_other_than_s3_keep_their_case_rules(tmp_path):
    assert normalise(f"FILE://{tmp_path}") == f"file://{tmp_path}" and resolve(f"FILE://{tmp_path}").path == str(tmp_path)
    assert normalise("/data/S3://x") == "/data/S3://x"  # a local path: no scheme to spell
    for uri, scheme in (("GS://bucket/x", "gs"), ("http://host/x", "http"), ("HTTPS://host/x", "https")):
        with pytest.raises(StorageError, match=f"unsupported scheme '{scheme}'; use s3://bucket/prefix or a local path"):
            resolve(uri)


@pytest.mark.parametrize(
    "uri, message",
    [("gs://bucket/x", "unsupported scheme 'gs'"), ("s3:///key", "no bucket in the URI"), ("", "empty URI")],
)
def test_bad_uris(uri, message):
    with pytest.raises(StorageError, match=message):
        resolve(uri)


def test_no_credentials_is_refused_before_any_request(tmp_path, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(StorageError, match="no AWS credentials found; set AWS_PROFILE"):
        resolve("s3://bucket/prefix", "http://127.0.0.1:9")


def test_endpoint_precedence_option_then_s3_variable_then_general(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://general:1")
    assert s3_endpoint(None) == "http://general:1"
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://s3-only:2")
    assert s3_endpoint(None) == "http://s3-only:2"
    assert s3_endpoint("http://option:3") == "http://option:3"


def test_aws_endpoint_url_reaches_a_real_s3_server(s3_env, s3_bucket, monkeypatch):
    """pyarrow's S3FileSystem ignores AWS_ENDPOINT_URL when built directly (only FileSystem.from_uri reads it); ours honours it."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_env)
    location = resolve(f"s3://{s3_bucket}/dir")
    with location.filesystem.open_output_stream(location.join("hello.txt")) as out:
        out.write(b"hi")
    assert location.filesystem.get_file_info(location.join("hello.txt")).size == 2


def test_bad_endpoint_and_unreachable_endpoint(s3_env):
    with pytest.raises(StorageError, match="bad S3 endpoint"):
        resolve("s3://b/p", "ftp://host")
    with pytest.raises(StorageError, match="cannot reach the S3 endpoint http://127.0.0.1:9"):
        resolve("s3://b/p", "http://127.0.0.1:9")  # nothing listens on port 9



@pytest.mark.parametrize(
    "uri, endpoint, shown",
    [
        ("s3://KEY:s3kr1t@bucket/in/", None, "s3://***@bucket/in/"),
        ("s3://KEY:s3k/r1t+@bucket/in/", None, "s3://***@bucket/in/"),  # secret keys hold "/" and "+"
        ("s3://bucket/in/", "http://user:s3kr1t@127.0.0.1:9000", "http://***@127.0.0.1:9000"),
    ],
)
def test_credentials_in_urls_are_refused_and_never_shown(uri, endpoint, shown):
    with pytest.raises(StorageError) as refused:
        resolve(uri, endpoint)
    assert str(refused.value).startswith(f"{shown}: ") and "s3k" not in str(refused.value), refused.value


def test_s3_keys_may_hold_at_signs():
    assert not has_credentials("s3://bucket/user@example.com/x.parquet") and not has_credentials("/data/a@b")


def test_max_attempts_come_from_the_sdk_variable(monkeypatch):
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "0")
    with pytest.raises(StorageError, match="AWS_MAX_ATTEMPTS='0': expected a positive integer"):
        resolve("s3://bucket/in/", "http://127.0.0.1:9")


def test_local_refusals_name_the_path_and_the_fix(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    location = resolve(str(tmp_path / "file" / "out"))
    with pytest.raises(StorageError, match=re.escape(f"{location.path}/_lease.json: a file stands where a folder should be: "
                                                     "move the file, or choose another path ([Errno 20] Not a directory")):
        create_exclusive(location, location.join("_lease.json"), b"{}")


@pytest.mark.skipif(not os.path.isdir("/sys/kernel"), reason="needs Linux's /sys")
def test_a_folder_even_root_may_not_write_is_one_line_naming_the_fix():
    """sysfs takes no new files from root either (EACCES; EROFS where /sys is mounted read-only)."""
    with pytest.raises(StorageError) as refused, storage_errors("/sys/kernel/_lease.json"):
        open("/sys/kernel/_lease.json", "xb")
    cause = refused.value.__cause__
    assert str(refused.value) == f"/sys/kernel/_lease.json: {_LOCAL_HINTS[cause.errno]} ({cause})"
