"""The driver's last step: verify the table, commit it (Delta, Iceberg), write its ids index and manifest, then tidy up.

The order is what readers see: every part is already committed, each whole; then the index of
the table's ids (its new segment ``_index/<run id>.ids``, a new name, beside the earlier ones it names), then, with ``--table-format delta`` or ``iceberg``,
the table's one commit of the run (``job.output.commit``), then ``_SUCCESS.json`` (one PUT: the
table readers trust, with its snapshot), a copy of it in ``_history/<run id>.json``, and only then
are the parts of input files that are gone deleted, and the index's segments it no longer names
with them. A run killed anywhere before the manifest leaves the previous manifest naming an index
that still exists.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

import pyarrow.fs as pafs

from job import report
from job.engine import Engine, EngineRun, Job
from job.output.memory import release_freed_memory
from job.manifest import MANIFEST, Counts, InputFiles, Manifest, copy_manifest, write_manifest
from job.input.data_files import input_relpath
from job.input.plan import InputFile
from job.output import prefix
from job.output.commit import TableChange, commit_run
from job.output.ids.id_index import IdIndex, index_files
from job.output.table import HISTORY_DIR, INDEX_DIR, Snapshot, TableFile, columns_record, diff
from job.output.stopped_runs import record_stopped_runs
from job.output.verify import KeptHolding, PartFacts, verify
from job.output.night import Night
from job.prepare import PreparedJob
from job.timeline import summarize
from storage import Location, storage_errors


def finish_job(prepared: PreparedJob, job: Job, engine: Engine, seconds: float, run: EngineRun, started_at: float) -> Manifest:
    """Verify the table, write the index, the manifest and its history copy, delete the parts of removed files."""
    output, plan, night, config = prepared.output, prepared.plan, prepared.night, prepared.config
    _write_empty_parts(prepared, job)
    release_freed_memory()  # what the engine's run freed: the final check's reads allocate next
    snapshot, kept_removed = night.snapshot, night.kept_removed
    # The table's parts (part -> input file), and each part's input file relative to --input: names made once.
    table = prepared.planned  # not copied: a million files' dict is 50 MB
    if kept_removed:  # --keep-removed: the parts of files gone stay in the table
        table = {**table, **{e.part: InputFile(name, e.rows) for name, e in kept_removed.items()}}
    relpath = {part: prepared.relpath(f.path) for part, f in prepared.planned.items()} | {
        e.part: name for name, e in kept_removed.items()}
    checked = _check_table(prepared, table, relpath)
    release_freed_memory()  # what the parts' reads and their hashes held: the manifest is made next
    prepared.lease.check()  # the table is committed only by the run that holds the output
    record_stopped_runs(output, {name: record for name, record in night.kept.items() if record is not None}, job.run_id)
    change = _table_change(night, checked.files, _bounds(prepared))
    committed = commit_run(output, config, snapshot, change, job.parts.table_schema, job.run_id)
    delta = diff(snapshot, {relpath[part]: f for part, f in prepared.planned.items()}, kept_removed)
    manifest = Manifest(
        engine=engine.name, run_id=job.run_id, input=config.input, output=config.output,
        config=config.to_dict(), execution=job.execution.to_dict(), output_options=job.parts.options, counts=checked.counts,
        input_files=InputFiles(total=len(plan.files), resumed=len(night.kept), run=len(job.pending.files), rows_run=job.pending.rows),
        seconds=round(seconds, 3),
        # This run's images: with --resume or --incremental, the rows of the files it ran, not those it kept.
        images_per_sec=round(job.pending.rows / seconds, 2) if seconds > 0 else None,
        timeline=summarize(run.progress, run.device_seconds, seconds, run.predictors, started_at),
        files=sorted(table), error_examples=checked.examples,
        versions=report.versions(*engine.packages), hardware=report.hardware(), settings=run.settings,
        manifest=output.uri_of(output.join(MANIFEST)),
        table=Snapshot(checked.files, columns_record(plan), checked.segments[-1], delta, committed.number,
                       committed.version, committed.retired),
    )
    prepared.lease.check()  # the manifest is written only by the run that holds the output
    write_manifest(output, manifest)
    copy_manifest(output, f"{HISTORY_DIR}/{job.run_id}.json")
    _tidy(output, committed.delete, checked.segments)
    return manifest


@dataclass(frozen=True)
class _Checked:
    """The table as the final check found it: what the rest of the last step needs, its parts' id hashes left behind."""

    files: dict[str, TableFile]  # input file (relative to --input) -> its entry in the table's snapshot
    counts: Counts
    examples: list[dict]
    segments: list[str]  # the ids index's segments, oldest first: the last names it in the manifest


def _check_table(prepared: PreparedJob, table: dict[str, InputFile], relpath: dict[str, str]) -> _Checked:
    """The final check (``verify``), then the ids index's segment of the parts it read; their hashes, a few hundred
    bytes a part, are dropped when this returns, before the manifest is made (a million parts: hundreds of MB)."""
    output, night = prepared.output, prepared.night
    snapshot, kept_removed = night.snapshot, night.kept_removed
    unread = {name for name, record in night.kept.items() if record is None} | {e.part for e in kept_removed.values()}
    leaving = [*night.removed, *(snapshot.retired if snapshot is not None else ())]
    previous = _previous_index(prepared, unread)
    read = {name: f for name, f in table.items() if name not in unread} if unread else table
    verified = verify(output, table, read,
                      _known_facts(snapshot, relpath, unread), prepared.plan.ids_as_text, leaving,
                      _holding(previous, {relpath[part]: part for part in unread}),
                      exact=prepared.config.table_format == "parquet")
    release_freed_memory()  # what the parts' reads freed: the segment's sort and write allocate next
    written = verified.hashes.renamed([relpath[part] for part in verified.hashes.names])  # by input file
    segments = previous.extended(prepared.run_id, relpath.values(), written)
    release_freed_memory()  # what the segment's sort and write freed: the table's entries are made next
    files = {relpath[part]: _table_file(part, table[part], verified.facts[part], kept_removed.get(relpath[part]))
             for part in table}
    return _Checked(files, verified.counts, verified.examples, segments)


def _table_change(night: Night, files: dict[str, TableFile], bounds: dict[str, tuple[str, str]]) -> TableChange:
    """What the night changes in the table: its parts after the run, each part's input file, what leaves and goes."""
    before = night.snapshot.files.items() if night.snapshot is not None else ()
    sources = {entry.part: name for name, entry in before} | {entry.part: name for name, entry in files.items()}
    return TableChange({entry.part: entry.rows for entry in files.values()}, sources, night.removed, night.leaving,
                       night.overwrite, bounds)


def _bounds(prepared: PreparedJob) -> dict[str, tuple[str, str]]:
    """The parts this run wrote or adopted -> the least and greatest source_file of their rows: an input file's name,
    or a group's first and last object key (those the snapshot vouches for are in the table's log already)."""
    root, kept = prepared.plan.location.path, prepared.night.kept
    bounds = {}
    for part, file in prepared.planned.items():
        if kept.get(part, 0) is None:
            continue
        if file.members:
            bounds[part] = (input_relpath(root, file.members[0][0]), input_relpath(root, file.members[-1][0]))
        else:
            name = input_relpath(root, file.path)
            bounds[part] = (name, name)
    return bounds


def _write_empty_parts(prepared: PreparedJob, job: Job) -> None:
    """The parts of input files without rows: no engine sees them, so the driver commits their (empty) parts."""
    for file in prepared.to_write.files:
        if file.rows == 0:
            job.parts.write(file, job.parts.schema.empty_table())


def _previous_index(prepared: PreparedJob, unread: set[str]) -> IdIndex:
    """The index the run's parts kept unread are in (the snapshot's), which its segment extends; with none kept
    unread, none: the run's segment is the whole index."""
    if not unread:
        return IdIndex(prepared.output)
    snapshot = prepared.night.snapshot
    assert snapshot is not None and snapshot.index is not None, "parts are kept unread only against a snapshot"
    return prepared.id_index(snapshot.index)


def _holding(index: IdIndex, kept: dict[str, str]) -> KeptHolding:
    """The final check's question to the index (``kept``: input file -> its part kept unread), answered by part."""
    return lambda hashes: {kept[file]: held for file, held in index.held(hashes, kept).items()}


def _known_facts(snapshot: Snapshot | None, relpath: dict[str, str], unread: set[str]) -> dict[str, PartFacts]:
    """What the table already knows of the parts kept unread: rows and errors from the snapshot (ids: in the index)."""
    entries = {part: snapshot.files[relpath[part]] for part in relpath if part in unread}
    return {part: PartFacts(e.rows, e.errored, e.size, e.transient) for part, e in entries.items()}  # in the table's order, as the commit lists them


def _table_file(part: str, file: InputFile, facts: PartFacts, kept_removed: TableFile | None) -> TableFile:
    if kept_removed is not None:
        return TableFile(part, kept_removed.identity, facts.rows, facts.errored, True, kept_removed.size, facts.transient,
                         kept_removed.withheld)
    return TableFile(part, file.identity, facts.rows, facts.errored, size=facts.size, transient=facts.transient,
                     withheld=file.withheld)


def _tidy(output: Location, removed_parts: tuple[str, ...], segments: list[str]) -> None:
    """After the manifest: delete the parts of input files gone, the index's segments it no longer names, temporaries."""
    named = {posixpath.basename(name) for name in index_files(segments)}
    with storage_errors(output.uri):
        for name in removed_parts:
            output.filesystem.delete_file(output.join(name))
        infos = output.filesystem.get_file_info(pafs.FileSelector(output.join(INDEX_DIR), allow_not_found=True))
        for info in infos:
            if info.type == pafs.FileType.File and posixpath.basename(info.path) not in named:
                output.filesystem.delete_file(info.path)
    prefix.clear_staging(output)
