"""Everything a run can refuse before any work, done once on the driver: ``prepare_job``.

In order, so that a refusal leaves the output as it was: the built-in sample when no input is
given, the input's listing (a missing input is named before the output is touched), the model
(described beside the listing by the driver, ``job.execution.model_for``: weights, architecture,
class names, recipe; its refusal comes first), the output's lease
(``job.lease``: one run per output prefix), what the output holds (``job.output.prefix.read_held``:
its parts, and the table's snapshot read once; a table of another ``--table-format`` is refused),
the input plan (``job.input.plan``: the dataset checks, on the files the snapshot does not vouch
for), the night (``job.output.night``: what the
run keeps, adopts, runs and removes) and the new files' ids against the table
(``job.output.incremental``). The driver runs it in a thread while the engine starts.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import cached_property

from inference.spec import ModelSpec
from job.config import JobConfig
from job.input.data_files import input_relpath, list_data_files
from job.input.plan import InputFile, InputPlan, plan_input
from job.lease.lease import LeaseOwner, OutputLease
from job.output import prefix
from job.output.formats import keeps_versions, require_format
from job.output.id_index import IdIndex
from job.output.incremental import check_new_ids, moved_files
from job.output.night import Night, decide_night
from job.output.parts import file_part_name
from job.output.table import columns_of, unchanged_files
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
    indexes: dict[str, IdIndex] = field(default_factory=dict, repr=False)  # ``id_index``'s, by name

    def part_name(self, file: InputFile) -> str:
        """The part's name of a planned file (``job.output.parts.part_name``; versioned in a table format)."""
        return file_part_name(self.plan.location.path, file, keeps_versions(self.config.table_format))

    def relpath(self, path: str) -> str:
        return input_relpath(self.plan.location.path, path)

    def id_index(self, name: str) -> IdIndex:
        """The table's ids index ``name``, read once a run: the night's checks and the final check all ask it."""
        if name not in self.indexes:
            self.indexes[name] = IdIndex.read(self.output, name)
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
    run_id = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}"
    # --overwrite, --resume and --incremental answer a run that died; each may take its expired lease.
    lease = OutputLease.acquire(output, LeaseOwner.this_process(run_id),
                                take_over_expired=config.resume or config.overwrite or config.incremental)
    with ExitStack() as holding:
        holding.enter_context(lease.held())
        held = prefix.read_held(output, read_manifest_too=config.resume or config.incremental)
        if not config.overwrite:
            recorded = held.finished.config.get("table_format", "parquet") if held.finished is not None else None
            require_format(output.uri, config.table_format, held.files, recorded)
        snapshot = held.snapshot if config.incremental or config.resume else None
        unchanged, columns = (unchanged_files(snapshot, source.path), columns_of(snapshot.columns)) if snapshot else (None, None)
        plan = plan_input(source, config, unchanged, columns, listing)
        job = PreparedJob(config, plan, model, output, run_id, lease, ExitStack(), Night())
        job.night = decide_night(config, job.planned, held, lambda names: prefix.read_footers(output, names),
                                 lambda gone, running: _moved(job, held, gone, running))
        _act_on(job, held)
        job.holding = holding.pop_all()  # prepared: the caller holds the lease from here
    return job


def _moved(job: PreparedJob, held: prefix.Held, gone: dict, running: list[str]) -> set[str]:
    """``decide_night``'s question under --keep-removed: which files gone reappear whole in the files to run."""
    if held.snapshot is None or held.snapshot.index is None:
        return set()
    new = [job.planned[name] for name in running if job.planned[name].rows]
    return moved_files(job.plan, new, job.id_index(held.snapshot.index), {name: e.part for name, e in gone.items()})


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
