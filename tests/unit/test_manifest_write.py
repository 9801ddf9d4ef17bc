"""The manifest written once: indented while small, compact JSON when big, its history copy made by the store."""

import json

import pytest

from job.night import manifest as manifest_module
from job.input.data_files import FileIdentity
from job.night.manifest import INDENTED_UP_TO_FILES, MANIFEST, copy_manifest, read_manifest, write_manifest
from job.night.record import Snapshot, TableFile
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


@pytest.mark.parametrize("together, held, chunk", [(7, 1000, 4096), (10_000, 1 << 20, 8 << 20)])
def test_a_big_manifest_encoded_in_pieces_is_byte_for_byte_json_dumps(tmp_path, monkeypatch, together, held, chunk):
    """The table's entries are encoded a slice at a time (``ENCODED_TOGETHER``), each made a dict only then, into a
    local file past ``HELD_UP_TO_BYTES`` and uploaded from it a chunk at a time: the bytes are those of ``json.dumps``
    of the whole record, however the slices and chunks fall, and read back as written."""
    monkeypatch.setattr(manifest_module, "ENCODED_TOGETHER", together)
    monkeypatch.setattr(manifest_module, "HELD_UP_TO_BYTES", held)
    monkeypatch.setattr(manifest_module, "UPLOAD_CHUNK_BYTES", chunk)
    big = _big_manifest()
    output = resolve(str(tmp_path / "out"))
    write_manifest(output, big)
    expected = json.dumps(big.to_dict(), separators=(",", ":"), default=str).encode()
    assert _read(output, MANIFEST) == expected
    assert read_manifest(output) == big and read_manifest(output).table.files["day=1/f-5.parquet"].removed


def test_a_manifest_that_fails_while_encoded_publishes_nothing(data_root, monkeypatch):
    """Every byte is encoded (into a local file) before the upload opens: an entry that cannot be encoded leaves the
    manifest before it as it was, on a folder and on S3."""
    root, endpoint = data_root
    output = resolve(f"{root}/out", endpoint)
    monkeypatch.setattr(manifest_module, "HELD_UP_TO_BYTES", 1000)
    write_manifest(output, a_manifest(files=["part-a.parquet"]))
    before = _read(output, MANIFEST)
    unencodable = TableFile.to_dict
    def to_dict(entry):
        if entry.part == "part-900.parquet":
            raise ValueError("cannot encode part-900")
        return unencodable(entry)
    monkeypatch.setattr(TableFile, "to_dict", to_dict)
    with pytest.raises(ValueError, match="part-900"):
        write_manifest(output, _big_manifest())
    assert _read(output, MANIFEST) == before


@pytest.mark.parametrize("table, refusal", [({"columns": {}}, "its table record has no 'files'"),
                                             (["part-a.parquet"], "its table record is not a snapshot")])
def test_a_manifest_whose_table_record_is_not_a_snapshot_is_refused_saying_why(tmp_path, table, refusal):
    output = resolve(str(tmp_path / "out"))
    record = a_manifest().to_dict() | {"table": table}
    output.filesystem.create_dir(output.path, recursive=True)
    with output.filesystem.open_output_stream(output.join(MANIFEST)) as out:
        out.write(json.dumps(record).encode())
    with pytest.raises(ValueError, match=refusal):
        read_manifest(output)


def _big_manifest():
    """A manifest past ``INDENTED_UP_TO_FILES`` with a table snapshot of as many files."""
    files = {f"day=1/f-{i}.parquet": TableFile(f"part-{i}.parquet", FileIdentity(100 + i, 1_700_000_000_000_000_000 + i),
                                                 4, i % 3, removed=i == 5) for i in range(INDENTED_UP_TO_FILES + 3)}
    table = Snapshot(files, {"id_column": "id", "shape_columns": None, "ids_as_text": True}, "_index/run.ids",
                     retired={"part-old.parquet": 1.5})
    return a_manifest(files=sorted(entry.part for entry in files.values()), table=table,
                      error_examples=[{"id": "é", "error": "undecodable"}])


def _read(output, name: str) -> bytes:
    with output.filesystem.open_input_stream(output.join(name)) as f:
        return f.read()
