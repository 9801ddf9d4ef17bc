"""Everything a run can refuse before any work, done once on the driver: ``prepare_job``.

In order, so that a refusal leaves the output as it was: the built-in sample when no input is
given, the input's listing (a missing input is named before the output is touched), the model
(described beside the listing by the driver, ``job.execution.model_for``: weights, architecture,
class names, recipe; its refusal comes first), the output's lease
(``job.lease``: one run per output prefix), what the output holds (``job.output.prefix.read_held``:
its parts, and the table's snapshot read once), what that snapshot vouches for in the listing
(``job.output.night.vouched_input``; a table of another ``--table-format`` is refused), the input
plan (``plan_listed``: the dataset checks, ``job.input.dataset_check``, on the files the snapshot does
not vouch for; image objects in groups, ``job.input.objects``), the night (``job.output.night``: what
the run keeps, adopts, runs and removes) and the new files' ids against the table
(``job.output.ids.incremental``). One computation, in this order, whatever the flags: the driver runs it
in a thread while the engine starts.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import cached_property

from inference.spec import ModelSpec
from job.config import JobConfig
from job.errors import JobError
from job.input.data_files import Listing, input_relpath, list_data_files, unchanged
from job.input.dataset_check import InputColumns, check_dataset
from job.input.objects import object_units
from job.input.plan import InputFile, InputPlan
from job.lease.lease import LeaseOwner, OutputLease
from job.output import prefix
from job.input.unique_ids import ID_HASH_VERSION
from job.output.deleted_objects import withhold
from job.output.formats import TableAt, table_files
from job.output.ids.id_index import IdIndex
from job.output.ids.incremental import check_new_ids, moved_files
from job.output.nesting import refuse_inside_another
from job.output.night import Night, decide_night, vouched_input
from job.output.parts import file_part_name
from job.output.table import Snapshot
from job.sample.sample import write_sample
from storage import Location, require_bucket, resolve


@dataclass
class PreparedJob:
    """Everything ``prepare_job`` found, before the engine's devices are known."""

    config: JobConfig
    plan: InputPlan  # every planned input file: what the finished output must hold
    model: ModelSpec  # the model, described once (job.execution.model_for)
    output: Location
    run_id: str
    lease: OutputLease  # this run's lease on the output prefix, renewed until ``holding`` is closed
    holding: ExitStack  # closing it stops renewing the lease and releases it (``run_job`` does, at the end)
    night: Night  # what this run does to the output (job.output.night)
    previous: Snapshot | None = None  # the table the output holds, as its manifest records it (its index's parts)
    indexes: dict[str, IdIndex] = field(default_factory=dict, repr=False)  # ``id_index``'s, by name

    def part_name(self, file: InputFile) -> str:
        """The part's name of a planned file: the table's when its snapshot holds this version of the file, else a new
        one (``job.output.parts.part_name``; salted by the run on an --overwrite of a table, whose old parts stay named)."""
        entry = self.previous.files.get(self.relpath(file.path)) if self.previous is not None else None
        if entry is None or entry.removed or self.config.overwrite or not unchanged(entry.identity, file.identity):
            return file_part_name(self.plan.location.path, file, self.salt)
        if file.path in self.rerun:  # rows that timed out: run again, beside the part readers read
            return file_part_name(self.plan.location.path, file, self.run_id)
        return entry.part

    @cached_property
    def rerun(self) -> frozenset[str]:
        """Unchanged input files an --incremental night runs again: their rows that timed out (a transient cause)."""
        if self.previous is None or not self.config.incremental:
            return frozenset()
        timed_out = {name for name, entry in self.previous.files.items() if entry.transient}
        return frozenset(f.path for f in self.plan.files if timed_out and self.relpath(f.path) in timed_out)

    @property
    def salt(self) -> str:
        """Part names' salt: an --overwrite of a Delta or Iceberg table writes beside the version readers still read."""
        return self.run_id if self.config.overwrite and self.config.table_format != "parquet" else ""

    def relpath(self, path: str) -> str:
        return input_relpath(self.plan.location.path, path)

    def id_index(self, name: str) -> IdIndex:
        """The table's ids index ``name``, read once a run: the night's checks and the final check all ask it."""
        if name not in self.indexes:
            self.indexes[name] = read_index(self.output, name, self.previous)
        return self.indexes[name]

    @cached_property
    def planned(self) -> dict:
        """Every planned input file by its part's name."""
        return {self.part_name(f): f for f in self.plan.files}

    @cached_property
    def to_write(self) -> InputPlan:
        """The planned files whose part this run writes (those the night does not keep)."""
        pending = set(self.night.pending(self.planned))
        return dataclasses.replace(self.plan, files=tuple(f for name, f in self.planned.items() if name in pending))

    @property
    def pending(self) -> InputPlan:
        """What the engine runs: the files to write that have rows (the driver writes the empty files' parts)."""
        return dataclasses.replace(self.to_write, files=tuple(f for f in self.to_write.files if f.rows > 0))


def read_index(output: Location, name: str, previous: Snapshot) -> IdIndex:
    """The table's ids index ``name`` (of the table ``previous``), in this version's id hash."""
    index = IdIndex.read(output, name)
    if index.hash_version != ID_HASH_VERSION:  # written before the hash's fix; the index is the previous table's
        parts = {file: entry.part for file, entry in previous.files.items()}
        index = index.remade(parts, previous.columns["ids_as_text"])
    return index


def prepare_job(config: JobConfig, described: Callable[[], ModelSpec]) -> PreparedJob:
    """Validate everything the job needs; raise JobError/StorageError/WeightsError otherwise.

    ``described``: the model's description (``job.execution.model_for``), which the driver runs
    beside this listing; asked for before the output is touched, so a refusal of the model (which
    wins over the input's) leaves the output as it was. The returned job holds the output's lease
    (renewed in a thread): close ``job.holding`` to release it. If preparing fails after taking the
    lease, the lease is released here.
    """
    config = _with_defaults(config)
    try:
        source, output = resolve(config.input, config.s3_endpoint_url), resolve(config.output, config.s3_endpoint_url)
        listing = list_data_files(source)  # a missing or empty input stops here, before the output is touched
    finally:
        model = described()  # raises the model's refusal, if any, in place of the listing's
    require_bucket(output, "--output")
    refuse_inside_another(output)  # and one holding another table: job.output.prefix, from its listing
    run_id = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}"
    # --overwrite, --resume and --incremental answer a run that died; each may take its expired lease.
    lease = OutputLease.acquire(output, LeaseOwner.this_process(run_id),
                                take_over_expired=config.resume or config.overwrite or config.incremental)
    with ExitStack() as holding:
        holding.enter_context(lease.held())
        held = prefix.read_held(output, config.resume or config.incremental or _overwrites_table(config),
                                shared=config.table_format != "parquet", overwrite=config.overwrite)
        vouched = vouched_input(config, held, listing, source.path)  # refuses another table format first
        plan = plan_listed(source, config, listing, vouched.files, vouched.columns)
        indexes: dict[str, IdIndex] = {}
        plan = _withheld(config, plan, held, listing, output, indexes)
        job = PreparedJob(config, plan, model, output, run_id, lease, ExitStack(), Night(), held.snapshot, indexes)
        job.night = decide_night(config, job.planned, held, lambda names: prefix.read_footers(output, names),
                                 lambda gone, running: _moved(job, held, gone, running),
                                 lambda: frozenset(job.relpath(f.path) for f in job.plan.files))
        _act_on(job, held)
        job.holding = holding.pop_all()  # prepared: the caller holds the lease from here
    return job


def _withheld(config: JobConfig, plan: InputPlan, held: prefix.Held, listing: Listing, output: Location,
              indexes: dict[str, IdIndex]) -> InputPlan:
    """A shared table continued from its snapshot: the image objects another writer deleted by key left out of their
    groups while unchanged (``job.output.deleted_objects``); the ids index read, if at all, into ``indexes``."""
    snapshot = held.snapshot
    if config.table_format == "parquet" or snapshot is None or not (config.incremental or config.resume):
        return plan

    def index() -> IdIndex:
        if snapshot.index not in indexes:
            indexes[snapshot.index] = read_index(output, snapshot.index, snapshot)
        return indexes[snapshot.index]

    at = TableAt.of(output, config)
    return withhold(plan, snapshot, listing, output, lambda: table_files(at, config.table_format), index)


def _overwrites_table(config: JobConfig) -> bool:
    """An --overwrite of a Delta or Iceberg table: one new version over the one the manifest records."""
    return config.overwrite and config.table_format != "parquet"


def _moved(job: PreparedJob, held: prefix.Held, gone: dict, running: list[str]) -> set[str]:
    """``decide_night``'s question under --keep-removed: which files gone reappear whole in the files to run."""
    if held.snapshot is None or held.snapshot.index is None:
        return set()
    new = [job.planned[name] for name in running if job.planned[name].rows]
    return moved_files(job.plan, new, job.id_index(held.snapshot.index), {name: e.rows for name, e in gone.items()})


def _act_on(job: PreparedJob, held: prefix.Held) -> None:
    """What the night asks before any work: clear the prefix (--overwrite), say what is redone, check new ids."""
    night, output = job.night, job.output
    if night.clear:
        prefix.clear(output, held)
    elif not night.done:
        prefix.clear_staging(output)  # temporaries of a killed run
    for note in night.notes:
        print(note, file=sys.stderr)
    snapshot = night.snapshot
    if job.pending.files and snapshot is not None and snapshot.index is not None and not job.config.skip_id_check:
        kept = {job.relpath(f.path): name for name, f in job.planned.items() if night.kept.get(name, 0) is None}
        kept |= {name: entry.part for name, entry in night.kept_removed.items()}  # --keep-removed: their ids stay too
        check_new_ids(job.plan, list(job.pending.files), output, job.id_index(snapshot.index), kept)


def _with_defaults(config: JobConfig) -> JobConfig:
    """Fill in the built-in sample and a fresh output directory when they were not given."""
    changes = {}
    if config.input is None:
        changes["input"] = write_sample()
        print(f"no --input: running the built-in sample with --weights {config.weights}", file=sys.stderr)
    if config.output is None:
        changes["output"] = tempfile.mkdtemp(prefix="predictions-")
    return dataclasses.replace(config, **changes) if changes else config


def plan_input(location: Location, config: JobConfig) -> InputPlan:
    """List the input and plan it (``plan_listed``): a whole first run's plan, for callers that hold no table."""
    return plan_listed(location, config, list_data_files(location))


def plan_listed(location: Location, config: JobConfig, listing: Listing, vouched: Mapping[str, InputFile] | None = None,
                columns: InputColumns | None = None) -> InputPlan:
    """Check the listed input (JobError, one line, on a problem) and plan it, before any work is scheduled.

    ``listing``: the input's ``list_data_files`` (the driver lists before it touches the output, so a
    missing input never leaves a trace there). ``vouched`` and ``columns``: the listed files an
    earlier run's table vouches for (unchanged since, by path: ``job.output.night.vouched_input``)
    and the columns it read: those files are kept without reading their footers again; the others
    are checked, and must have those columns.
    """
    if listing.images:
        return _plan_objects(location, config, listing, columns)
    kept = vouched or {}
    to_check = [path for path in listing if path not in kept]
    if not to_check and columns is not None:
        return _plan(location, config, tuple(sorted(kept.values(), key=lambda f: f.path)), columns)
    report = check_dataset(location, to_check, image_column=config.image_column,
                           id_column=config.id_column, raw_shape=config.raw_shape, limit=config.limit,
                           check_ids=not config.skip_id_check, require_rows=columns is None)
    if columns is not None and report.columns not in (None, columns):
        raise JobError(f"{location.uri_of(report.files[0][0])}: the new input files' columns ({report.columns}) differ from "
                       f"the table's ({columns}); make them agree, or pass --overwrite to redo the table from them")
    digests = report.ids.digests if report.ids is not None else {}
    checked = [InputFile(path, rows, listing[path], digests.get(path)) for path, rows in report.files]
    # Files without rows are files of the table all the same (with an empty part), so that a night
    # does not check them again, and a file emptied since loses its old rows; --limit runs no whole file.
    empty = [InputFile(path, 0, listing[path]) for path in report.empty] if config.limit is None else []
    files = tuple(sorted([*kept.values(), *checked, *empty], key=lambda f: f.path))
    return _plan(location, config, files, report.columns or columns)


def _plan_objects(location: Location, config: JobConfig, listing: Listing, columns: InputColumns | None) -> InputPlan:
    """A prefix of image objects: every group of objects one planned unit; ids are the keys, so nothing is read."""
    keys = InputColumns(id_column=None, shape_columns=False, ids_as_text=True)
    if columns is not None and columns != keys:
        raise JobError(f"{location.uri}: holds image objects, but the table was made from Parquet files with other "
                       f"columns ({columns}); pass --overwrite to redo the table from the objects")
    units = object_units(location, listing, config.objects_per_part, config.limit)
    files = tuple(InputFile(path, len(members), identity, digest, members) for path, members, identity, digest in units)
    return _plan(location, config, files, keys)


def _plan(location: Location, config: JobConfig, files: tuple[InputFile, ...], columns: InputColumns) -> InputPlan:
    return InputPlan(location, files, columns.id_column, config.image_column, columns.shape_columns, columns.ids_as_text)
