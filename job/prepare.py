"""Everything a run can refuse before any work, and what it finds there, done once on the driver: ``prepare_job``.

In order, so that a refusal leaves the output as it was: the built-in sample when no input is
given, the input's listing (a missing input is named before the output is touched), the model
(described beside the listing by the driver, ``job.execution.model_for``: weights, architecture,
class names, recipe; its refusal comes first), the output's lease
(``job.lease``: one run per output prefix), what the output holds (``job.night.held.read_held``:
its parts, and the table's snapshot read once), what that snapshot vouches for in the listing
(``job.night.vouched.vouched_input``; a table of another ``--table-format`` is refused) and the input
plan (``plan_listed``: the dataset checks, ``job.input.dataset_check``, on the files the snapshot does
not vouch for; image objects in groups, ``job.input.objects``, less those another writer deleted from a
shared table, ``job.night.deleted_objects``). The driver runs it in a thread while the engine starts;
what the night then does with the output is decided once the run's options are known
(``job.night.planning.plan_night``).
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass

from inference.spec import ModelSpec
from job.config import JobConfig
from job.errors import JobError
from job.input.data_files import Listing, list_data_files
from job.input.dataset_check import InputColumns, check_dataset
from job.input.objects import object_units
from job.input.plan import InputFile, InputPlan
from job.lease.lease import LeaseOwner, OutputLease
from job.night.deleted_objects import withhold
from job.night.formats import TableAt, table_files
from job.night.held import Held, read_held
from job.night.nesting import refuse_inside_another
from job.night.vouched import vouched_input
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
    lease: OutputLease | None  # this run's lease on the output prefix, renewed until ``holding`` is closed (a dry run: none)
    holding: ExitStack  # closing it stops renewing the lease and releases it (``run_job`` does, at the end)
    held: Held  # what the output prefix holds: its parts, the finished manifest and the table's snapshot

    @property
    def continues(self) -> bool:
        """Whether the run continues a finished table (--resume, --incremental on one): its plan may need no engine."""
        return (self.config.resume or self.config.incremental) and self.held.finished is not None


def prepare_job(config: JobConfig, described: Callable[[], ModelSpec], listing: Listing | None = None) -> PreparedJob:
    """Validate everything the job needs and find what the output holds; raise JobError/StorageError/WeightsError otherwise.

    ``described``: the model's description (``job.execution.model_for``), which the driver runs
    beside this listing; asked for before the output is touched, so a refusal of the model (which
    wins over the input's) leaves the output as it was. The returned job holds the output's lease
    (renewed in a thread): close ``job.holding`` to release it. If preparing fails after taking the
    lease, the lease is released here. A dry run (``config.dry_run``) takes no lease and writes nothing. ``listing``: the
    input's, listed already (several models' tables over one input list it once).
    """
    config = _with_defaults(config)
    try:
        source, output = resolve(config.input, config.s3_endpoint_url), resolve(config.output, config.s3_endpoint_url)
        if listing is None:  # several models' tables share one listing of their input (job.several.run)
            listing = list_data_files(source)  # a missing or empty input stops here, before the output is touched
    finally:
        model = described()  # raises the model's refusal, if any, in place of the listing's
    require_bucket(output, "--output")
    refuse_inside_another(output)  # and one holding another table: job.night.held, from its listing
    run_id = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}"
    lease = None
    if not config.dry_run:  # a dry run reads the output and leaves it as it is: no lease, no run in another's way
        # --overwrite, --resume and --incremental answer a run that died; each may take its expired lease.
        lease = OutputLease.acquire(output, LeaseOwner.this_process(run_id),
                                    take_over_expired=config.resume or config.overwrite or config.incremental)
    with ExitStack() as holding:
        if lease is not None:
            holding.enter_context(lease.held())
        shared, at = config.table_format != "parquet", TableAt.of(output, config)
        held = read_held(output, config.resume or config.incremental or _overwrites_table(config), shared=shared,
                         overwrite=config.overwrite, log=(lambda: table_files(at, config.table_format)) if shared else None)
        vouched = vouched_input(config, held, listing, source.path)  # refuses another table format first
        plan = _withheld(config, plan_listed(source, config, listing, vouched.files, vouched.columns), held, listing)
        return PreparedJob(config, plan, model, output, run_id, lease, holding.pop_all(), held)


def _withheld(config: JobConfig, plan: InputPlan, held: Held, listing: Listing) -> InputPlan:
    """A shared table continued from its snapshot: the image objects another writer deleted by key left out of their
    groups while unchanged (``job.night.deleted_objects``)."""
    if config.table_format == "parquet" or held.snapshot is None or not (config.incremental or config.resume):
        return plan
    return withhold(plan, held.snapshot, listing, held.output, held.data_files, held.id_index)


def _overwrites_table(config: JobConfig) -> bool:
    """An --overwrite of a Delta or Iceberg table: one new version over the one the manifest records."""
    return config.overwrite and config.table_format != "parquet"


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
    earlier run's table vouches for (unchanged since, by path: ``job.night.vouched.vouched_input``)
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
