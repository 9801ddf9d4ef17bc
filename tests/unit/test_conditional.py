"""Conditional writes on a local path, as a reader that takes no lock sees them: an object appears whole, never empty
or half written (Iceberg's readers poll version-hint.text this way), and create-if-absent and compare-and-swap hold."""

from __future__ import annotations

import os
import threading

from storage import resolve
from storage.conditional import create_exclusive, read_versioned, replace_if

WRITES = 120
BIG = 256 * 1024  # large enough that a truncate-then-write is seen half done by a reader that polls


def test_a_reader_polling_an_object_while_it_is_replaced_never_sees_it_empty_or_half_written(tmp_path):
    output = resolve(str(tmp_path))
    path = output.join("metadata/version-hint.text")
    values = [str(n).encode() * (BIG // len(str(n))) for n in range(1, 10)]
    version = create_exclusive(output, path, values[0])
    seen, stop = [], threading.Event()

    def reader():
        while not stop.is_set():
            with open(path, "rb") as f:  # no lock: as pyiceberg, Spark or DuckDB read it
                seen.append(f.read())

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for n in range(WRITES):
            version = replace_if(output, path, values[n % len(values)], version)
            assert version is not None
    finally:
        stop.set()
        thread.join()
    assert len(seen) > 10 and all(data in values for data in seen), "a reader saw the object empty or half written"
    assert os.listdir(tmp_path / "metadata") == ["version-hint.text"], "a temporary file was left beside it"


def test_create_exclusive_appears_whole_and_refuses_an_existing_name_leaving_it_as_it_was(tmp_path):
    output = resolve(str(tmp_path))
    path = output.join("metadata/v1.metadata.json")
    assert create_exclusive(output, path, b"ours") is not None
    assert create_exclusive(output, path, b"theirs") is None
    assert read_versioned(output, path)[0] == b"ours"
    assert os.listdir(tmp_path / "metadata") == ["v1.metadata.json"]


def test_a_replace_whose_version_moved_on_changes_nothing(tmp_path):
    output = resolve(str(tmp_path))
    path = output.join("hint")
    first = create_exclusive(output, path, b"1")
    second = replace_if(output, path, b"2", first)
    assert replace_if(output, path, b"3", first) is None and read_versioned(output, path) == (b"2", second)
