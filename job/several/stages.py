"""Several models in one run (``--models``): each image read and decoded once, and fed to every model that needs it.

A run of several models has one input plan (the union of the files any model's table must score tonight) and one
``ModelRun`` per model (``job.engine``): its execution, its table's parts, the files it scores. The stages do the rest
the same way on every engine:

- the CPU stage makes each image's pixels in each recipe the run's models take (``recipe_groups``: models of one recipe
  share its pixels) from one decode where the recipes allow (``job.stages.Preprocess.several``), and only in the
  recipes of the models that score the image's file (``groups_of``);
- ``ClassifyMany`` holds every model in the one actor (process, task) that runs them: a batch of a recipe goes to the
  models of that recipe that score its rows' files, each with its own batch size and its own output columns;
- ``PartCollectors`` commits each model's parts under its own table's prefix, each file's part as soon as its rows
  for that model are in.

One actor holding every model beats a pool a model: the decoded pixels cross no process boundary twice, and each
model runs as soon as its batch is decoded (docs/engines.md has the figures). The rows cross from a Ray actor to the
driver as one Arrow IPC blob a model (``rows_blob``): each model's rows have their own columns.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from job.config import JobConfig
from job.engine import EngineRun, ModelRun
from job.execution import Execution
from job.input.plan import InputFile
from job.output.parts import PartCollector
from job.stages import Batch, Classify, PixelBatch
from job.timeline import decode_of, device_seconds_of, with_decode_time
from preprocess.recipe import Recipe

Rows = list[tuple[int, pa.Table]]  # (the model's index in the run, its output rows of one batch)
MODEL, ROWS = "model", "rows"  # a Ray block of several models' rows: each model's as one Arrow IPC stream


def recipe_groups(models: Sequence[ModelRun | Execution]) -> tuple[tuple[Recipe, ...], tuple[int, ...]]:
    """The run's distinct recipes, and each model's index among them (models of one recipe share its pixels)."""
    recipes = [model.execution.recipe if isinstance(model, ModelRun) else model.recipe for model in models]
    distinct: list[Recipe] = []
    for recipe in recipes:
        if recipe not in distinct:
            distinct.append(recipe)
    return tuple(distinct), tuple(distinct.index(recipe) for recipe in recipes)


def groups_of(runs: Sequence[ModelRun], groups: Sequence[int], index: int) -> list[int]:
    """The recipes (their indices) the run's file ``index`` is made in: those of the models that score it."""
    wanted = {group for run, group in zip(runs, groups) if run.files is None or index in run.files}
    return sorted(wanted)


class ClassifyMany:
    """Every model of the run, loaded once in this process: a batch of a recipe -> each of its models' rows.

    ``executions``: each model's; ``files``: each model's files among the run's (None: every one, as for one model).
    """

    def __init__(self, config: JobConfig, executions: Sequence[Execution],
                 files: Sequence[frozenset[int] | None] | None = None, gpu_ids: list[int] | None = None) -> None:
        self.executions = tuple(executions)
        self.files = tuple(files) if files is not None else (None,) * len(self.executions)
        self.groups = recipe_groups(self.executions)[1]
        self.classifiers = [Classify(config, execution, gpu_ids) for execution in self.executions]

    @classmethod
    def of(cls, config: JobConfig, runs: Sequence[ModelRun], gpu_ids: list[int] | None = None) -> ClassifyMany:
        """The models of a command's run (``Job.runs``)."""
        return cls(config, [run.execution for run in runs], [run.files for run in runs], gpu_ids)

    def __call__(self, batch: Batch) -> Rows:
        rows: Rows = []
        for model, (execution, files, group) in enumerate(zip(self.executions, self.files, self.groups)):
            if group != getattr(batch, "group", 0):
                continue
            needed = _needed(batch, files)
            if needed is not None:
                rows.append((model, self._classified(model, needed, execution.batch_size)))
        if rows and isinstance(batch, PixelBatch) and batch.decodes:
            model, table = rows[0]
            rows[0] = (model, with_decode_time(table, batch.decodes, batch.decode_seconds))
        return rows


    def _classified(self, model: int, batch: Batch, size: int) -> pa.Table:
        """``batch`` through the model, in calls of its own batch size at most (models differ in cost)."""
        if len(batch.ids) <= size or not isinstance(batch, PixelBatch):
            return self.classifiers[model](batch)
        tables = [self.classifiers[model](part) for part in _chunks(batch, size)]
        return pa.concat_tables(tables)


def _chunks(batch: PixelBatch, size: int) -> list[PixelBatch]:
    """``batch`` as consecutive batches of ``size`` rows (the pixels of each one's decoded rows with it)."""
    ok = np.cumsum([0] + [error is None for error in batch.errors])
    parts = []
    for start in range(0, len(batch.ids), size):
        end = min(start + size, len(batch.ids))
        parts.append(PixelBatch(batch.ids[start:end], batch.pixels[ok[start]:ok[end]], batch.errors[start:end],
                                None if batch.files is None else batch.files[start:end],
                                None if batch.rows is None else batch.rows[start:end], batch.group))
    return parts


def _needed(batch: Batch, files: frozenset[int] | None) -> Batch | None:
    """The rows of ``batch`` whose input file ``files`` holds (None: every one); None when none is."""
    if files is None or batch.files is None:
        return batch
    keep = np.isin(batch.files, np.fromiter(files, np.int64, len(files)))
    if keep.all():
        return batch
    if not keep.any():
        return None
    ok = np.array([error is None for error in batch.errors], bool)
    chosen = np.flatnonzero(keep)
    return PixelBatch([batch.ids[i] for i in chosen], batch.pixels[keep[ok]], [batch.errors[i] for i in chosen],
                      batch.files[keep], batch.rows[keep], batch.group)


def rows_blob(rows: Rows) -> pa.Table:
    """Several models' rows as one block of one schema (a Ray actor's output): a model's rows an IPC stream."""
    streams = []
    for _, table in rows:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        streams.append(sink.getvalue().to_pybytes())
    return pa.table({MODEL: pa.array([m for m, _ in rows], pa.int16()), ROWS: pa.array(streams, pa.binary())})


def rows_of_blob(block: pa.Table) -> Rows:
    """The rows ``rows_blob`` packed, back as (model, rows)."""
    models, streams = block.column(MODEL).to_pylist(), block.column(ROWS)
    return [(model, pa.ipc.open_stream(streams[i].as_buffer()).read_all()) for i, model in enumerate(models)]


class PartCollectors:
    """One ``PartCollector`` a model, each committing its parts under its own table's prefix; and what the rows tell
    of the run: each model's time in its calls, the decodes and their seconds."""

    def __init__(self, runs: Sequence[ModelRun], files: Sequence[InputFile]) -> None:
        self.collectors = [PartCollector(run.parts, files) for run in runs]
        self.device_seconds = [0.0] * len(self.collectors)
        self.decodes, self.decode_seconds = 0, 0.0

    def add(self, rows: Rows) -> list[tuple[str, int]]:
        """Take several models' rows; the parts they completed."""
        done = []
        for model, table in rows:
            self.device_seconds[model] += device_seconds_of(table)
            decodes, seconds = decode_of(table)
            self.decodes, self.decode_seconds = self.decodes + decodes, self.decode_seconds + seconds
            done += self.collectors[model].add(table)
        return done

    def report(self, settings: dict, predictors: int = 1) -> EngineRun:
        """What the engine reports: one model's figures, or each model's beside the run's decodes."""
        first = self.collectors[0]
        if len(self.collectors) == 1:
            return EngineRun(settings=settings, progress=first.progress, device_seconds=self.device_seconds[0],
                             predictors=predictors)
        models = [(c.progress, seconds) for c, seconds in zip(self.collectors, self.device_seconds)]
        return EngineRun(settings=settings, progress=first.progress, device_seconds=sum(self.device_seconds),
                         predictors=predictors, models=models, decodes=self.decodes,
                         decode_seconds=round(self.decode_seconds, 3))

    def check_complete(self) -> None:
        for collector in self.collectors:
            collector.check_complete()

    @property
    def repeated(self) -> int:
        return sum(collector.repeated for collector in self.collectors)
