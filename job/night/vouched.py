"""What a finished table's snapshot vouches for in tonight's listing, before any footer is read: ``vouched_input``.

The driver lists the input, then, before it checks the dataset (``job.prepare``), asks which listed files the table
already holds as they are: those keep their rows unread, their footers and ids not read again. An output holding
another table format than ``--table-format`` is refused first.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass

from job.config import JobConfig
from job.errors import JobError
from job.input.data_files import Listing, unchanged
from job.input.dataset_check import InputColumns
from job.input.plan import InputFile
from job.night.formats import FOLDERS
from job.night.held import Held


@dataclass(frozen=True)
class Vouched:
    """What the table's last snapshot vouches for in tonight's listing, before any footer is read."""

    files: Mapping[str, InputFile] | None = None  # listed files unchanged since the snapshot (by path): kept unread
    columns: InputColumns | None = None  # the columns the table was made from: new files must have them


def vouched_input(config: JobConfig, held: Held, listing: Listing, input_root: str) -> Vouched:
    """The listed input files the table's snapshot vouches for (--resume, --incremental), and its columns.

    Refuses first (one line) an output that holds another table format than ``--table-format``: by its
    format's folder, or its manifest's record (``--overwrite`` replaces it, so is not refused).
    """
    if not config.overwrite:
        recorded = held.finished.config.get("table_format", "parquet") if held.finished is not None else None
        found = next((name for name, folder in FOLDERS.items() if any(f.startswith(folder + "/") for f in held.files)), None)
        found = found or recorded
        if found is not None and found != config.table_format:
            raise JobError(f"{held.uri} holds a {found} table and --table-format is {config.table_format}; pass "
                           f"--table-format {found}, or --overwrite to replace it, or choose another --output")
    snapshot = held.snapshot if config.incremental or config.resume else None
    if snapshot is None:
        return Vouched()
    files = {}
    for name, entry in snapshot.files.items():
        path = posixpath.join(input_root, name)
        if not entry.removed and path in listing and unchanged(entry.identity, listing[path]):
            files[path] = InputFile(path, entry.rows, entry.identity)
    record = snapshot.columns
    return Vouched(files, InputColumns(record["id_column"], record["shape_columns"], record["ids_as_text"]))
