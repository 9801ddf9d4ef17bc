"""The manifest written once: indented while small, compact JSON when big, its history copy made by the store."""

import json

from job.manifest import INDENTED_UP_TO_FILES, MANIFEST, copy_manifest, read_manifest, write_manifest
from storage import resolve
from tests.common.parts import a_manifest


def test_a_big_manifest_is_compact_and_its_history_copy_the_same_bytes(data_root):
    root, endpoint = data_root  # a local folder, and a bucket on the S3 server (CopyObject)
    output = resolve(f"{root}/out", endpoint)
    small, big = a_manifest(files=["part-a.parquet"]), a_manifest(files=[f"part-{i}.parquet" for i in range(INDENTED_UP_TO_FILES + 1)])
    write_manifest(output, small)
    assert b'\n  "engine": "test"' in _read(output, MANIFEST)  # indented for a person
    write_manifest(output, big)
    text = _read(output, MANIFEST)
    assert b"\n" not in text and json.loads(text) == big.to_dict()  # compact: the same JSON to a reader
    assert read_manifest(output) == big
    uri = copy_manifest(output, "_history/run.json")
    assert uri == output.uri_of(output.join("_history/run.json")) and _read(output, "_history/run.json") == text


def _read(output, name: str) -> bytes:
    with output.filesystem.open_input_stream(output.join(name)) as f:
        return f.read()
