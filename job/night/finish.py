"""The driver's last step: verify the table, commit it (Delta, Iceberg), write its ids index and manifest, then tidy up.

It reads the night's plan (``job.night.plan.NightPlan``): the table's parts after the night and their input
files, which parts it reads and which the snapshot vouches for, what leaves the table; it works none of
them out again.

The order is what readers see: every part is already committed, each whole; then the index of
the table's ids (its new segment ``_index/<run id>.ids``, a new name, beside the earlier ones it names), then, with
``--table-format delta`` or ``iceberg``, the table's one commit of the run (``job.night.commit``), then the manifest's
history copy ``_history/<run id>.json`` (one PUT), then ``_SUCCESS.json`` (the store's copy of it: the table readers
trust, with its snapshot), and only then are the parts of input files that are gone deleted, and the index's segments
it no longer names with them. A run killed anywhere before the manifest leaves the previous manifest naming an index
that still exists; every run a row names has its record in ``_history/`` (a night killed between the two writes leaves
a record and no manifest, and the next night finishes the table). The steps are ``job.failpoints``' names, where
tests kill the process for real.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
import dataclasses
from dataclasses import dataclass

import pyarrow.fs as pafs

from job import failpoints, report
from job.engine import Engine, EngineRun, Job
from job.ids.index import IdIndex, index_files
from job.ids.segment import INDEX_DIR
from job.input.data_files import input_relpath
from job.input.plan import InputFile
from job.lease.lease import OutputLease
from job.night.check import KeptHolding, PartFacts, verify
from job.night.commit import Committed, TableChange, commit_run
from job.night.held import Held, clear_staging
from job.night.manifest import MANIFEST, Counts, InputFiles, Manifest, copy_manifest, write_manifest
from job.night.memory import release_freed_memory
from job.night.options import model_label
from job.night.plan import NightPlan
from job.night.record import HISTORY_DIR, Snapshot, TableFile, columns_record, diff
from job.night.rollout import Rollout
from job.night.stopped_runs import mend_history, record_stopped_runs
from job.timeline import Timeline, summarize
from storage import Location, storage_errors


@dataclass(frozen=True)
class Ran:
    """What the engine's part of the run was: its report, its seconds, when the command started."""

    engine: Engine
    run: EngineRun
    seconds: float
    started_at: float


def finish_job(night: NightPlan, job: Job, ran: Ran, held: Held, lease: OutputLease) -> Manifest:
    """Verify the table, write the index, commit, write the manifest's history copy and the manifest, delete what
    leaves."""
    output, config = night.output, job.config
    _write_empty_parts(night, job)
    release_freed_memory()  # what the engine's run freed: the final check's reads allocate next
    checked = _check_table(night, held, job.run_id)
    release_freed_memory()  # what the parts' reads and their hashes held: the manifest is made next
    failpoints.reached("checked")
    lease.check()  # the table is committed only by the run that holds the output
    record_stopped_runs(output, night.adopted, job.run_id, {d.part for d in night.decisions if d.live})
    mend_history(output, held.finished)
    failpoints.reached("before-commit")
    committed = commit_run(output, config, night.snapshot, _table_change(night, checked.files), job.parts.table_schema,
                           job.run_id)
    failpoints.reached("committed")
    manifest = _manifest(night, job, ran, checked, committed)
    lease.check()  # the manifest is written only by the run that holds the output
    # The history copy first: every run a row names has its record before any reader trusts the manifest naming it.
    history = f"{HISTORY_DIR}/{job.run_id}.json"
    write_manifest(output, manifest, history)
    failpoints.reached("history-written")
    copy_manifest(output, MANIFEST, source=history)
    failpoints.reached("manifest-written")
    removed = night.removed if not night.shared else ()  # a shared table's strays are retired: an old version may name one
    _tidy(output, tuple(sorted({*committed.delete, *removed})), checked.segments)
    return manifest


def _manifest(night: NightPlan, job: Job, ran: Ran, checked: _Checked, committed: Committed) -> Manifest:
    config, plan, pending, seconds = job.config, night.input, job.pending, ran.seconds
    files = {name: _made(entry, night, committed) for name, entry in checked.files.items()}
    models = {night.target: dict(night.options)} | {key: night.models.options_of(key) for key in set(night.made_by.values())}
    delta = diff(night.snapshot, {d.unit: d.file for d in night.decisions if d.file is not None}, night.kept_removed)
    return Manifest(
        engine=ran.engine.name, run_id=job.run_id, input=config.input, output=config.output,
        config=config.to_dict(), execution=job.execution.to_dict(), output_options=job.parts.options,
        counts=_counts(checked.counts, files, committed),
        input_files=InputFiles(total=len(plan.files), resumed=len(night.kept), run=len(pending.files),
                               rows_run=pending.rows),
        seconds=round(seconds, 3),
        # This run's images: with --resume or --incremental, the rows of the files it ran, not those it kept.
        images_per_sec=round(pending.rows / seconds, 2) if seconds > 0 else None,
        timeline=_timeline(ran, seconds),
        files=sorted(entry.part for entry in files.values()), error_examples=checked.examples,
        versions=report.versions(*ran.engine.packages), hardware=report.hardware(), settings=ran.run.settings,
        manifest=night.output.uri_of(night.output.join(MANIFEST)),
        table=Snapshot(files, columns_record(plan), checked.segments[-1], delta, committed.number,
                       committed.version, committed.retired, models, night.target),
        rollout=_rollout(night, files, models),
    )


def _timeline(ran: Ran, seconds: float) -> Timeline:
    """The run's timeline; with several models, the decodes they shared and this model's own time in its calls."""
    timeline = summarize(ran.run.progress, ran.run.device_seconds, seconds, ran.run.predictors, ran.started_at)
    if ran.run.decodes is None:
        return timeline
    return dataclasses.replace(timeline, images_decoded=ran.run.decodes, decode_seconds=ran.run.decode_seconds,
                               model_seconds=round(ran.run.device_seconds, 3))


def _counts(read: Counts, files: Mapping[str, TableFile], committed: Committed) -> Counts:
    """The final check's counts, less the rows the table leaves out because another writer deleted them."""
    withheld = sum(entry.taken for entry in files.values())
    errored = sum(w.errored for w in committed.withheld.values())
    return Counts(read.rows_in, read.rows_out - withheld, read.predicted - (withheld - errored), read.errored - errored,
                  withheld)


def _rollout(night: NightPlan, files: Mapping[str, TableFile], models: Mapping[str, dict]) -> dict | None:
    """Where a rollout stands after the night, counted from the table (None: the table is, and was, on one model)."""
    keys = {entry.made_by or night.target for entry in files.values()}
    was_rolling = night.snapshot is not None and len(night.snapshot.models) > 1
    if night.previous is None or (len(keys) == 1 and not night.rescored and not was_rolling):
        return None
    labels = {key: model_label(models.get(key) or night.models.options_of(key)) for key in keys | {night.target}}
    return Rollout.of_table(files, night.target, labels, night.rescored, night.budget, night.window).to_dict()


def _made(entry: TableFile, night: NightPlan, committed: Committed) -> TableFile:
    """``entry`` with what made it: the model (recorded only when not tonight's), the run (this one, for its parts), and
    what of it the table holds: the file its part was committed as, the rows others deleted."""
    withheld = committed.withheld.get(entry.part)
    if withheld is not None:
        return dataclasses.replace(entry, part=withheld.name, made_by=None, made_in=committed.number, taken=withheld.taken)
    if entry.part in night.unread:
        unit = night.relpath[entry.part]
        before = night.snapshot.files.get(unit) if night.snapshot is not None else None
        taken = max(before.taken if before is not None else 0, entry.rows - night.present.get(unit, entry.rows))
        return dataclasses.replace(entry, made_by=night.made_by.get(entry.part),
                                   made_in=before.made_in if before is not None else 0, taken=taken)
    return dataclasses.replace(entry, made_by=None, made_in=committed.number)


@dataclass(frozen=True)
class _Checked:
    """The table as the final check found it: what the rest of the last step needs, its parts' id hashes left behind."""

    files: dict[str, TableFile]  # input file (relative to --input) -> its entry in the table's snapshot
    counts: Counts
    examples: list[dict]
    segments: list[str]  # the ids index's segments, oldest first: the last names it in the manifest


def _check_table(night: NightPlan, held: Held, run_id: str) -> _Checked:
    """The final check (``verify``), then the ids index's segment of the parts it read; their hashes, a few hundred
    bytes a part, are dropped when this returns, before the manifest is made (a million parts: hundreds of MB)."""
    output, snapshot, kept_removed = night.output, night.snapshot, night.kept_removed
    table, relpath, unread = night.table, night.relpath, night.unread
    leaving = [*night.removed, *(snapshot.retired if snapshot is not None else ())]
    previous = held.id_index() if unread else IdIndex(output)  # the index the parts kept unread are in
    read = {name: f for name, f in table.items() if name not in unread} if unread else table
    verified = verify(output, table, read, _known_facts(snapshot, relpath, unread), night.input.ids_as_text, leaving,
                      _holding(previous, {relpath[part]: part for part in unread}), exact=not night.shared)
    release_freed_memory()  # what the parts' reads freed: the segment's sort and write allocate next
    written = verified.hashes.renamed([relpath[part] for part in verified.hashes.names])  # by input file
    segments = previous.extended(run_id, relpath.values(), written)
    release_freed_memory()  # what the segment's sort and write freed: the table's entries are made next
    files = {relpath[part]: _table_file(part, table[part], verified.facts[part], kept_removed.get(relpath[part]))
             for part in table}
    return _Checked(files, verified.counts, verified.examples, segments)


def _table_change(night: NightPlan, files: dict[str, TableFile]) -> TableChange:
    """What the night changes in the table: its parts after the run, each part's input unit, what it adds, what leaves
    and goes, and the parts whose rows other writers may have deleted meanwhile."""
    adds = {part: files[night.relpath[part]].rows for part in night.adds}
    return TableChange({entry.part: entry.rows for entry in files.values()}, night.known, adds, night.removed,
                       night.leaving, night.overwrite, _bounds(night), night.watched, night.planned_version)


def _bounds(night: NightPlan) -> dict[str, tuple[str, str]]:
    """The parts this run adds -> the least and greatest source_file of their rows: an input file's name, or a group's
    first and last object key."""
    root = night.input.location.path
    bounds = {}
    for part, file in night.adds.items():
        if file.members:
            bounds[part] = (input_relpath(root, file.members[0][0]), input_relpath(root, file.members[-1][0]))
        else:
            bounds[part] = (night.relpath[part], night.relpath[part])
    return bounds


def _write_empty_parts(night: NightPlan, job: Job) -> None:
    """The parts of input files without rows: no engine sees them, so the driver commits their (empty) parts."""
    for file in night.to_write.files:
        if file.rows == 0:
            job.parts.write(file, job.parts.schema.empty_table())


def _holding(index: IdIndex, kept: dict[str, str]) -> KeptHolding:
    """The final check's question to the index (``kept``: input file -> its part kept unread), answered by part."""
    return lambda hashes: {kept[file]: held for file, held in index.held(hashes, kept).items()}


def _known_facts(snapshot: Snapshot | None, relpath: Mapping[str, str], unread: frozenset[str]) -> dict[str, PartFacts]:
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
    clear_staging(output)
