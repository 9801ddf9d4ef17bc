"""The worker side of the output: each input file's part, named, gathered and committed whole.

A part holds every output row of one input file and nothing else; its name depends only on
the input file (``part_name``), so a retried task, a speculative attempt or a Ray block re-run
after an actor died writes the same part again, with the same rows. ``Parts.write`` makes a
part visible whole or not at all: locally a temporary file under ``_staging/`` renamed into
place (atomic within a filesystem); on S3 one PUT of the finished bytes (an object appears
only once its upload completes; S3 has no rename). Each footer records the input file, its
rows, the input file's identity (size, modification time) and the job's options, which
``--resume`` checks (``job.night.held``): a part of a replaced input file is redone.

``PartCollector`` is for rows of several files arriving interleaved and maybe twice (the Ray
driver's stream, a Spark task's partition): every row carries its input file index and its
position (``with_position``); a position seen before is dropped, and a file's part is
committed the moment its last position arrives. A row whose file index is ``FAILED`` carries a
``DataError`` (a damaged input file, a null id) from the reader to the collector, which raises it
there: as a row it crosses every engine's pipeline without a worker traceback (Ray logs one per
failed task) or a retry (Spark retries a failed task 4 times, and a damaged file fails every time).
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from job import failpoints, progress
from job.config import JobConfig
from job.errors import DataError
from job.execution import Execution
from job.input.data_files import FileIdentity, input_relpath
from job.input.plan import InputFile, InputPlan
from job.output.rows import EMBEDDING, model_lineage, stored_schema, with_lineage
from job.timeline import progress_events
from storage import Location, storage_errors

STAGING = "_staging"  # <output>/_staging/: temporaries, never read; cleared after a run and by --resume
PART_PREFIX, PART_SUFFIX = "part-", ".parquet"
PART_METADATA = b"batch_inference.part"  # footer key: {"input_file", "rows", "options", "identity", "run_id"}
STEM_CHARS = 64  # keeps part names readable (and under S3's 1024-byte keys) for long input names
PART_NAME = re.compile(r"part-[A-Za-z0-9._-]*-[0-9a-f]{8}(-[0-9a-f]{8}){0,2}\.parquet")  # what part_name makes
# What decides a part's rows; --resume refuses parts written with others. The user's options...
OUTPUT_OPTIONS = ("weights", "image_column", "id_column", "raw_shape", "limit", "max_pixels")
# ...the run's decisions (job.execution): who decoded and how the CPU resized (pixels differ by resampling
# rounding between the CPU and the device paths, and between --cpu-resize fast and exact), at what precision,
# with which recipe, which columns...
EXECUTION_OPTIONS = ("decode", "cpu_resize", "precision", "recipe", "topk", "predictions", "embeddings")
# ...and the model the driver described: its source (resnet50, timm:convnext_tiny, hf:..., mlflow:models:/pets/3), its
# architecture, names and weights by their hashes, and how its logits became scores (softmax, or each class's sigmoid
# for a multi-label head). A table written before ``source`` reads as its arch (job.night.options).
MODEL_OPTIONS = ("source", "arch", "names_sha256", "weights_sha256", "activation")
# The parts' own layout: 2 adds the lineage columns. A table of parts laid out otherwise is refused (one line naming
# --overwrite) rather than mixed with parts of other columns, which its readers could not read as one table.
LAYOUT = 2


def part_name(input_root: str, path: str, version: FileIdentity | None = None, salt: str = "") -> str:
    """``part-<stem>-<8 hex>-<8 hex>.parquet`` for an input file (a path inside the input filesystem) at ``version``.

    The second digest names the input file's version (its identity): each version of a file gets a new
    object, so a replaced file's part never overwrites bytes a reader (or a table's older version) reads,
    and a stopped night's new parts stand beside last night's instead of over them. ``salt`` (the run id of
    an ``--overwrite`` of a table) gives a third, so that its parts never take the name of one the table holds.
    """
    relative = input_relpath(input_root, path)
    stem = posixpath.basename(relative).removesuffix(".parquet")
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", stem)[:STEM_CHARS]
    versioned = "" if version is None else "-" + _digest(json.dumps(version.to_dict(), sort_keys=True))
    salted = "-" + _digest(salt) if salt else ""
    return f"{PART_PREFIX}{stem}-{_digest(relative)}{versioned}{salted}{PART_SUFFIX}"


def file_part_name(input_root: str, file: InputFile, salt: str = "") -> str:
    """The part's name of a planned file, by its path and version (``part_name``)."""
    return part_name(input_root, file.path, file.identity, salt)


def is_part_name(name: str) -> bool:
    """Whether ``name`` (relative to the prefix) is one of our parts: other writers of a shared table (OPTIMIZE's
    ``part-00000-<uuid>-c000.zstd.parquet``) start theirs with ``part-`` too."""
    return PART_NAME.fullmatch(name) is not None


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def output_options(config: JobConfig, plan: InputPlan, execution: Execution) -> dict:
    """What decides a part's rows: the input (as resolved), OUTPUT_OPTIONS, EXECUTION_OPTIONS and
    MODEL_OPTIONS, as JSON reads them back."""
    options = {name: getattr(config, name) for name in OUTPUT_OPTIONS}
    options["raw_shape"] = list(config.raw_shape) if config.raw_shape else None
    plan_record = execution.to_dict()
    decided = {name: plan_record[name] for name in EXECUTION_OPTIONS}
    model = {name: plan_record["model"][name] for name in MODEL_OPTIONS}
    return {"input": plan.location.uri_of(plan.location.path), **options, **decided, **model, "layout": LAYOUT}


@dataclass(frozen=True)
class Parts:
    """Where a job's parts go and what their footers record; pickled into every writer."""

    output: Location
    staging: str  # <output>/_staging/<run id>: local temporaries
    input_root: str  # the input prefix inside its filesystem; part names hash paths relative to it
    options: dict  # output_options(): recorded in each footer
    schema: pa.Schema  # job.output.rows.output_schema(): the rows an engine hands over are cast to it
    run_id: str = ""  # the run writing them: each row's run_id
    # Input files (paths) -> their part's name, as the night's plan named it (job.night.naming: a file scored again as
    # it is, or whose plain name a part has already, gets a name salted by the run); others: ``file_part_name``.
    names: Mapping[str, str] = field(default_factory=dict)
    in_table: bool = False  # a Delta or Iceberg table's part: the embedding a plain list (``rows.stored_schema``)

    @property
    def table_schema(self) -> pa.Schema:
        """What a part holds on storage: the rows' columns and their lineage (``job.output.rows.table_schema``)."""
        return stored_schema(self.schema, self.in_table)

    def name(self, file: InputFile) -> str:
        return self.names.get(file.path) or file_part_name(self.input_root, file)

    def write(self, file: InputFile, table: pa.Table) -> str:
        """Commit ``table`` as the part of ``file``; it must hold every row of the file."""
        if table.num_rows != file.rows:
            raise RuntimeError(f"{file.path}: {table.num_rows} output rows for {file.rows} input rows; its part was not written")
        name, fs = self.name(file), self.output.filesystem
        source = input_relpath(self.input_root, file.path)
        record = {"input_file": source, "rows": file.rows, "options": self.options,
                  "identity": file.identity.to_dict() if file.identity is not None else None, "run_id": self.run_id}
        model = model_lineage(self.options.get("source") or self.options.get("arch", "unknown"), self.options.get("weights"),
                              self.options.get("weights_sha256"))
        rows = table.select(self.schema.names).cast(self.schema)
        # An image object's row comes from the object, not its group: its source is its key (its id), so a privacy
        # DELETE by key finds it, and a night takes out a group's rows by their keys' range.
        sources = rows.column("id") if file.members is not None else source
        rows = with_lineage(rows, sources, self.run_id, model, datetime.now(timezone.utc)).cast(self.table_schema)
        data = _serialize(rows, {PART_METADATA: json.dumps(record)})
        final = self.output.join(name)
        with storage_errors(self.output.uri_of(final)):
            if self.output.is_s3:
                _put(fs, final, data)  # one PUT: the object appears whole or not at all
            else:
                temp = f"{self.staging}/{name}.{uuid.uuid4().hex[:8]}.tmp"
                fs.create_dir(self.staging, recursive=True)
                _put(fs, temp, data)
                fs.move(temp, final)  # rename: atomic on a local filesystem
        failpoints.reached("part-written")
        return name


def read_part_record(location: Location, name: str) -> tuple[int, dict | None]:
    """A committed part's row count and footer record (None when it has none) from its footer."""
    path = location.join(name)
    with storage_errors(location.uri_of(path)), location.filesystem.open_input_file(path) as f:
        metadata = pq.ParquetFile(f).metadata
    raw = (metadata.metadata or {}).get(PART_METADATA)
    return metadata.num_rows, json.loads(raw) if raw else None


FILE = "input_file_index"  # int32: index into the plan's files
ROW = "input_row"  # int64: the row's position in its input file
FAILED = -1  # FILE of a row that stands for a DataError (its ``error``), not for an input row


def with_position(table: pa.Table, files: np.ndarray, rows: np.ndarray) -> pa.Table:
    """``table`` plus each row's input file index and position."""
    return table.append_column(FILE, pa.array(files, pa.int32())).append_column(ROW, pa.array(rows, pa.int64()))


def failure_positions() -> tuple[np.ndarray, np.ndarray]:
    """The FILE and ROW values of the one row that carries a DataError (see the module docstring)."""
    return np.full(1, FAILED, np.int32), np.zeros(1, np.int64)


def positions(index: int, start: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The FILE and ROW values of ``count`` consecutive rows of one file from ``start``."""
    return np.full(count, index, np.int32), np.arange(start, start + count, dtype=np.int64)


class _FileRows:
    """The rows of one input file received so far, each position once."""

    def __init__(self, rows: int) -> None:
        self.seen = np.zeros(rows, dtype=bool)
        self.tables: list[pa.Table] = []

    def add(self, table: pa.Table) -> pa.Table:
        """Keep the rows at positions not seen yet; returns them."""
        rows = table.column(ROW).to_numpy()
        _, first = np.unique(rows, return_index=True)  # a position twice within one batch counts once
        keep = np.zeros(len(rows), dtype=bool)
        keep[first] = ~self.seen[rows[first]]
        self.seen[rows[keep]] = True
        kept = table.filter(pa.array(keep))
        if kept.num_rows:
            self.tables.append(kept)
        return kept

    @property
    def complete(self) -> bool:
        """Whether every position has arrived."""
        return bool(self.seen.all())

    def table(self) -> pa.Table:
        """All rows, in input order (so a part's bytes do not depend on arrival order)."""
        table = pa.concat_tables(self.tables)
        return table.take(pc.sort_indices(table.column(ROW)))


class PartCollector:
    """Rows in, committed parts out: one per input file, written once all its rows arrived."""

    def __init__(self, parts: Parts, files: Sequence[InputFile]) -> None:
        self.parts = parts
        self.files = files  # the plan's files, indexed by the FILE column
        self.open: dict[int, _FileRows] = {}
        self.committed: set[int] = set()
        self.progress: list[tuple[float, int]] = []  # (when the model did them, rows that were new): the job's timeline
        self.repeated = 0  # rows that came again (a block redone after a worker or node was lost), dropped

    def add(self, table: pa.Table) -> list[tuple[str, int]]:
        """Take rows (with FILE and ROW columns); returns (name, rows) of the parts this committed.

        Raises the ``DataError`` a ``FAILED`` row carries, after committing what the other rows complete.
        """
        done, new = [], []
        for index in np.unique(table.column(FILE).to_numpy()).tolist():
            if index == FAILED:
                continue  # raised below, once the rows beside it are in
            rows = table.filter(pc.equal(table.column(FILE), index))
            if index in self.committed:
                self.repeated += rows.num_rows  # a re-executed block of a file already written: nothing new in it
                continue
            file = self.files[index]
            pending = self.open.setdefault(index, _FileRows(file.rows))
            new.append(pending.add(rows))
            self.repeated += rows.num_rows - new[-1].num_rows
            if pending.complete:
                done.append((self.parts.write(file, pending.table()), file.rows))
                del self.open[index]
                self.committed.add(index)
        # When the model did them, per model call (Ray's driver sees them later, several calls a block).
        events = progress_events(pa.concat_tables(new)) if new else []
        self.progress += events
        progress.advance(sum(rows for _, rows in events))  # the display, on a driver (Ray, local); nothing in an executor
        failed = table.filter(pc.equal(table.column(FILE), FAILED)).column("error")
        if len(failed):
            raise DataError(failed[0].as_py())
        return done

    def check_complete(self) -> None:
        """Raise if a file whose rows began to arrive did not get all of them (no part was written)."""
        if self.open:
            index, pending = next(iter(self.open.items()))
            file = self.files[index]
            raise RuntimeError(f"{len(self.open)} input files got only some of their rows (e.g. {file.path}: "
                               f"{int(pending.seen.sum())} of {file.rows}); their parts were not written")


def _serialize(table: pa.Table, metadata: dict[bytes, str]) -> pa.Buffer:
    sink = pa.BufferOutputStream()
    # No dictionary for embeddings: trying one over 2,048 float16s a row doubled the writer's CPU
    # (about 0.07 against 0.035 ms a row) for parts 12% smaller (benchmarks/part_writer_bench.py).
    dictionary = [_leaf(field) for field in table.schema if field.name != EMBEDDING]
    pq.write_table(table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata}), sink,
                   use_dictionary=dictionary)
    return sink.getvalue()


def _leaf(field: pa.Field) -> str:
    """The Parquet column path of ``field``'s values (a list's values are ``<name>.list.element``)."""
    listed = pa.types.is_list(field.type) or pa.types.is_fixed_size_list(field.type)
    return f"{field.name}.list.element" if listed else field.name


def _put(fs: pafs.FileSystem, path: str, data: pa.Buffer) -> None:
    # One write of the finished bytes, then close: an upload never completes half a part.
    with fs.open_output_stream(path) as out:
        out.write(data)
