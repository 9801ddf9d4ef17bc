"""The driver of a run of several models (``--models``): each model's table prepared, planned and finished as a
single-model night's is, and one engine run for them all.

Before any work, every table is prepared (``job.prepare``: its own lease, what its output holds), its model described,
its night planned and begun (``job.driver``): a refusal of any of them (a model that cannot load, an output refused, a
table's rule) stops the whole run, exit 2, naming the entry, and leaves every output as it was. Each table's plan is its
own (one may be in a rollout, another incremental with nothing new); the engine then reads the union of the files the
tables score, each image once (``job.several``), and every table is finished by its own final check, commit and
manifest, with the engine's figures for its model. A run killed part-way is finished by the next ``--resume`` or
``--incremental`` for every table: each adopts the parts its footers prove.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
from collections.abc import Iterator, Sequence

from job import prepare
from job.config import JobConfig
from job.engine import Engine, EngineRun, Job, ModelRun
from job.errors import JobError
from job.execution import model_for
from job.input.data_files import list_data_files
from job.input.plan import InputFile, InputPlan
from job.night.finish import Ran, finish_job
from job.night.plan import NightPlan
from job.night.summary import print_summary
from job.prepare import PreparedJob
from job.steps import begin, decide_job, execute, on_the_tables_devices, stopped_part_way, without_engine
from job.sample.sample import write_sample
from storage import resolve


@dataclasses.dataclass
class Table:
    """One model's table in the run: its entry's name, what preparing found, and, once decided, its job and night."""

    name: str
    prepared: PreparedJob
    job: Job | None = None
    night: NightPlan | None = None


def run_several(engine: Engine, configs: Sequence[JobConfig], args: argparse.Namespace, started_at: float) -> dict:
    """Every model's table, one engine run; returns ``{"models": [each table's manifest]}``."""
    entry_names = [f"--models {args.models} entry {number} ({config.model})" for number, config in enumerate(configs, 1)]
    configs = _one_input(configs)
    with _tables(configs, entry_names) as tables:
        if all(t.prepared.continues for t in tables) and not any(_has_work(t, engine) for t in tables):
            return {"models": [_without_engine(t, engine, started_at) for t in tables]}
        with engine.start(args) as session:
            devices = session.devices()
            for table in tables:
                with _naming(table.name):
                    table.job, table.night = decide_job(table.prepared, engine, devices)
                    begin(table.prepared, table.job, table.night)
            with stopped_part_way():
                run, seconds = execute(engine, _combined(tables), session, args)
        manifests = []
        for number, table in enumerate(tables):
            ran = Ran(engine, _model_report(run, number), seconds, started_at)
            with stopped_part_way():
                manifests.append(finish_job(table.night, table.job, ran, table.prepared.held, table.prepared.lease))
    for manifest in manifests:
        print_summary(manifest)
    return {"models": [manifest.to_dict() for manifest in manifests]}


def _one_input(configs: Sequence[JobConfig]) -> list[JobConfig]:
    """The built-in sample, written once for every model when no --input is given."""
    if configs[0].input is not None:
        return list(configs)
    sample = write_sample()
    return [dataclasses.replace(config, input=sample) for config in configs]


@contextlib.contextmanager
def _tables(configs: Sequence[JobConfig], names: Sequence[str]) -> Iterator[list[Table]]:
    """Every table prepared (the input listed once), each with its lease, released at the end however the run ends."""
    listing = list_data_files(resolve(configs[0].input, configs[0].s3_endpoint_url))
    with contextlib.ExitStack() as leases:
        tables = []
        for config, name in zip(configs, names):
            with _naming(name):
                prepared = prepare.prepare_job(config, lambda config=config: model_for(config), listing)
            leases.enter_context(prepared.holding)
            tables.append(Table(name, prepared))
        yield tables


@contextlib.contextmanager
def _naming(name: str) -> Iterator[None]:
    """A refusal met for one model's table, as one line naming its entry."""
    try:
        yield
    except JobError as e:
        raise type(e)(f"{name}: {e}") from e


def _has_work(table: Table, engine: Engine) -> bool:
    """Whether the table's night, planned on the devices its last night had, scores or changes anything."""
    guess = on_the_tables_devices(table.prepared, engine)
    return guess is None or not (guess[1].done or (not guess[1].pending.files and not guess[1].changes_table))


def _without_engine(table: Table, engine: Engine, started_at: float) -> dict:
    with _naming(table.name):
        job, night = on_the_tables_devices(table.prepared, engine)
        return without_engine(table.prepared, job, night, engine, started_at)


def _combined(tables: Sequence[Table]) -> Job:
    """The engine's one job: the union of the files the tables score (a file scored the same way by several read
    once), and a ``ModelRun`` a table naming its files in that union."""
    union: list[InputFile] = []
    at: dict[InputFile, int] = {}
    runs = []
    for table in tables:
        indices = []
        for file in table.job.pending.files:
            if file not in at:
                at[file] = len(union)
                union.append(file)
            indices.append(at[file])
        runs.append(ModelRun(table.job.execution, table.job.parts, frozenset(indices)))
    first = tables[0].job
    pending = InputPlan(first.pending.location, tuple(union), first.pending.id_column, first.pending.image_column,
                        first.pending.shape_columns, first.pending.ids_as_text)
    return dataclasses.replace(first, pending=pending, models=tuple(runs))


def _model_report(run: EngineRun, number: int) -> EngineRun:
    """The engine's report for one model's table: that model's progress and model time, the run's decodes."""
    if not run.models:
        return run
    progress, device_seconds = run.models[number]
    return dataclasses.replace(run, progress=progress, device_seconds=device_seconds, models=[])  # decodes: the run's

