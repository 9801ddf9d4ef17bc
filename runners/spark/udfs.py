"""The executor side of the Spark job: functions Spark ships to its Python workers.

Use it through ``runners.spark_job`` (the API's rows: ``runners.spark.rows``); nothing here starts or configures
Spark. Every function gets the run's ``Job`` (``job.driver``): its config and its decided ``Execution``; the files
to run come beside it, broadcast once (``TaskSpec``), so no task unpickles the whole plan.

- ``ReadAndClassify`` (``--udf iterator``): a ``mapInArrow`` function over rows of planned
  file indices. It reads each file with pyarrow, preprocesses, classifies with a model
  cached per Python worker process, and commits each file's part.
- ``ReadAndPreprocess`` + ``series_predict`` + ``WriteParts`` (``--udf series``): the
  reference benchmark's shape, where a Series pandas UDF builds the model on every batch.

Each input file gets one part, committed atomically once all its rows are in (``job.output.parts``)
under a name that depends only on the input file: a retried or speculative attempt rewrites
the same part whole and never adds a second one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark import Accumulator, Broadcast, SparkContext, TaskContext

from job.config import JobConfig
from job.engine import Job
from job.errors import DataError
from job.execution import Execution
from job.feedback import IdleMeter, LatestFeedback
from job.input.plan import InputFile, InputPlan
from job.output.parts import FILE, ROW
from job.output.rows import EMBEDDING, embedding_column, output_schema
from job.several.stages import MODEL, ClassifyMany, PartCollectors, Rows, groups_of, recipe_groups
from job.stages import Batch, Classify, PixelBatch, Preprocess
from job.timeline import DECODE_SECONDS, DECODES, DEVICE_SECONDS, decode_of, device_seconds_of
from runners.spark.prefetch import prefetched

# What each writing task reports to the driver, one row per model batch: the job's timeline (rows
# done, when the model did them) and the parts that batch completed. ``error``: a DataError that
# stopped the task's files (then rows is 0), which the driver raises.
STATS_SCHEMA = pa.schema([("partition", pa.int32()), ("attempt", pa.int32()), ("rows", pa.int64()), ("done_at", pa.float64()),
                          ("parts", pa.int32()), (DEVICE_SECONDS, pa.float64()), ("error", pa.string()),
                          # Several models (job.several): whose rows, and the decodes they carried (the run's, once).
                          (MODEL, pa.int32()), (DECODES, pa.float64()), (DECODE_SECONDS, pa.float64())])
# --udf series: what its preprocessing stage hands the model's. Spark gets both schemas as its own types
# through ``from_arrow_schema`` (runners.spark_job), so each is written once, here.
PIXELS_SCHEMA = pa.schema([("id", pa.string()), ("pixels", pa.binary()), ("error", pa.string()), (FILE, pa.int32()), (ROW, pa.int64())])

_CLASSIFIERS: dict[tuple, ClassifyMany] = {}  # per Python worker process, by the run's models and the task's GPUs


@dataclass(frozen=True)
class TaskSpec:
    """What every task needs; pickled into the function Spark ships, which every task unpickles.

    So it holds no list of files: ``job.pending`` comes without them, and ``files`` is a Spark
    broadcast, sent to each Python worker once and unpickled there once (``pending``). A task's
    own cost then does not grow with the input, and a run's stays linear in its files.
    """

    job: Job  # how, and where parts go; its ``pending`` plan without its files (``pending`` has them)
    files: Broadcast  # job.pending.files, which the rows index (their FILE column)
    prefetch: int  # preprocessed batches read ahead in a thread; 0: none
    # Rows done, summed on the driver as each task succeeds (a failed attempt's never count): its progress display.
    rows_done: Accumulator | None = None

    @classmethod
    def of(cls, context: SparkContext, job: Job, prefetch: int) -> TaskSpec:
        """The spec of ``job``'s tasks; ``release`` it once they ran."""
        light = replace(job, pending=replace(job.pending, files=()))
        return cls(light, context.broadcast(job.pending.files), prefetch, rows_done=context.accumulator(0))

    @property
    def pending(self) -> InputPlan:
        """The planned files to run, on an executor as on the driver."""
        files: tuple[InputFile, ...] = self.files.value  # loaded once per Python worker, then kept with the broadcast
        return replace(self.job.pending, files=files)

    def release(self, finished: bool = True) -> None:
        """Free the files' broadcast (a notebook's session outlives the job): on the executors and the driver once
        the stage ``finished``; else on the executors only.

        A stage that did not finish (Ctrl-C, a failed task) may still be in Spark's scheduler, serializing
        tasks that ship the broadcast: destroying it under them is Spark's ``INTERNAL_ERROR_BROADCAST``, logged
        as an ERROR with its stack. Unpersisted, it stays valid; its driver copy goes with the spec (Spark's
        ContextCleaner, when nothing refers to it).
        """
        if finished:
            self.files.destroy()
        else:
            self.files.unpersist()


def task_gpu_ids() -> list[int] | None:
    """The GPU addresses Spark assigned this task, or None when no GPU resources were asked for."""
    context = TaskContext.get()
    gpu = context.resources().get("gpu") if context else None
    return [int(a) for a in gpu.addresses] if gpu and gpu.addresses else None


def cached_classifier(config: JobConfig, executions: Sequence[Execution],
                      files: Sequence[frozenset[int] | None] | None = None) -> ClassifyMany:
    """The run's models (one, or several: job.several) for this task's GPU (or CPU), loaded once per Python worker and
    reused."""
    gpus = task_gpu_ids()
    key = (config, tuple(executions), tuple(files or ()), tuple(gpus or ()))
    if key not in _CLASSIFIERS:
        _CLASSIFIERS[key] = ClassifyMany(config, executions, files, gpu_ids=gpus)
    return _CLASSIFIERS[key]


def device_name() -> str | None:
    """On an executor: the name of the GPU a task gets (the driver's probe for the run's plan), None without one."""
    import torch

    from inference import choose_device

    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_name(choose_device(task_gpu_ids()))


def preprocessed(spec: TaskSpec, files: Iterator[pa.RecordBatch], feedback: LatestFeedback | None = None) -> Iterator[Batch]:
    """The partition's files as preprocessed batches of one model batch each; ``feedback``: the model's word (--decode auto)."""
    job, pending = spec.job, spec.pending
    runs = job.runs
    recipes, groups = recipe_groups(runs) if len(runs) > 1 else ((), ())
    preprocess = Preprocess(job.config, job.execution, feedback.poll if feedback is not None else None, recipes)
    for batch in files:
        for index in batch.column(FILE).to_pylist():
            several = groups_of(runs, groups, index) if groups else None
            yield from preprocess.read(pending, index, job.read_rows, several)


def write_parts(spec: TaskSpec, batches: Iterator[Rows]) -> Iterator[pa.RecordBatch]:
    """Commit the part of each input file in ``tables`` (rows with FILE and ROW); one stats row per model batch.

    A file's part is committed as soon as its last row is in, so a task that dies later keeps
    it; its retry writes the same part again, whole, under the same name. A ``DataError`` (a
    damaged input file, a null id) ends the task with a stats row carrying it, not a failure:
    Spark would retry a failed task, and the data fails the same way every time.
    """
    context = TaskContext.get()
    partition, attempt = context.partitionId(), context.attemptNumber()
    collectors = PartCollectors(spec.job.runs, spec.pending.files)
    try:
        for rows in batches:
            for model, table in rows:
                collector = collectors.collectors[model]
                device_seconds, (decodes, decode_seconds) = device_seconds_of(table), decode_of(table)
                seen = len(collector.progress)
                committed = collectors.add([(model, table)])
                for at, done in collector.progress[seen:]:  # the batch's new rows, stamped where the model ran
                    yield _stats(partition, attempt, done, at, len(committed), device_seconds, model=model,
                                 decodes=decodes, decode_seconds=decode_seconds)
                    device_seconds, committed, decodes, decode_seconds = 0.0, [], 0, 0.0  # each counted once
                    if spec.rows_done is not None:
                        spec.rows_done.add(done)
    except DataError as e:
        yield _stats(partition, attempt, 0, time.time(), 0, 0.0, error=str(e))
        return
    collectors.check_complete()


def _stats(partition: int, attempt: int, rows: int, done_at: float, parts: int, device_seconds: float,
           error: str | None = None, model: int = 0, decodes: int = 0, decode_seconds: float = 0.0) -> pa.RecordBatch:
    stats = {"partition": [partition], "attempt": [attempt], "rows": [rows], "done_at": [done_at], "parts": [parts],
             DEVICE_SECONDS: [device_seconds], "error": [error], MODEL: [model], DECODES: [float(decodes)],
             DECODE_SECONDS: [decode_seconds]}
    return pa.RecordBatch.from_pydict(stats, schema=STATS_SCHEMA)


def classified(config: JobConfig, executions: Sequence[Execution], batches: Callable[[LatestFeedback | None], Iterator[Batch]],
               prefetch: int, files: Sequence[frozenset[int] | None] | None = None) -> Iterator[Rows]:
    """Each model's output rows of ``batches(feedback)``: preprocessed ``prefetch`` batches ahead in a thread while
    the models (cached per Python worker) run; shared by the command's tasks and the API's (``runners.spark.rows``)."""
    # --decode auto: the decode thread and the model share this worker, so the word goes through memory.
    feedback = LatestFeedback() if executions[0].auto_adapts else None
    ready = prefetched(batches(feedback), prefetch)  # reading starts now...
    classify = cached_classifier(config, executions, files)  # ...while the models load (once per Python worker)
    meter = IdleMeter(feedback.post) if feedback is not None else nullcontext()
    return (_metered(classify, batch, meter) for batch in ready)


class ReadAndClassify:
    """``--udf iterator``: read, preprocess, classify and write one partition in one Python pass."""

    def __init__(self, spec: TaskSpec) -> None:
        self.spec = spec

    def __call__(self, files: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        runs = self.spec.job.runs
        rows = classified(self.spec.job.config, [run.execution for run in runs],
                          lambda feedback: preprocessed(self.spec, files, feedback), self.spec.prefetch,
                          [run.files for run in runs])
        yield from write_parts(self.spec, rows)


def _metered(classify: ClassifyMany, batch: Batch, meter: AbstractContextManager) -> Rows:
    with meter:
        return classify(batch)


class ReadAndPreprocess:
    """``--udf series``, stage 1: files -> (id, uint8 pixels as bytes, error, file, row) rows."""

    def __init__(self, spec: TaskSpec) -> None:
        self.spec = spec

    def __call__(self, files: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in prefetched(preprocessed(self.spec, files), self.spec.prefetch):
            # One crop x crop x 3 uint8 image per row (HWC); null where the row has an error.
            pixels = iter(batch.pixels)  # the rows without errors, in row order
            column = [next(pixels).tobytes() if e is None else None for e in batch.errors]
            columns = {"id": batch.ids, "pixels": column, "error": batch.errors, FILE: batch.files, ROW: batch.rows}
            yield pa.RecordBatch.from_pydict(columns, schema=PIXELS_SCHEMA)


def udf_fields(execution: Execution) -> list[pa.Field]:
    """The columns the series UDF returns: the output's, less id and error, as Spark can declare them.

    Spark has no float16: the embedding travels as a list of float32, and ``WriteParts`` turns it
    back into the output's type (``_embedding_as_planned``), so the part is the same as on every engine.
    """
    fields = [f for f in output_schema(execution) if f.name not in ("id", "error")]
    return [pa.field(EMBEDDING, pa.list_(pa.float32())) if f.name == EMBEDDING else f for f in fields]


def series_predict(config: JobConfig, execution: Execution) -> Callable[[pd.Series, pd.Series], pd.DataFrame]:
    """``--udf series``, stage 2: the body of a Series pandas UDF, model built on every call.

    This is what the reference benchmark did; it is kept to measure what that costs.
    """

    def predict(pixels: pd.Series, errors: pd.Series) -> pd.DataFrame:
        classify = Classify(config, execution, gpu_ids=task_gpu_ids())  # deliberately per batch (see above)
        errs = [None if e is None or (isinstance(e, float) and np.isnan(e)) else e for e in errors]
        crop = execution.recipe.crop
        ok = [np.frombuffer(cell, np.uint8).reshape(crop, crop, 3) for cell, error in zip(pixels, errs) if error is None]
        stacked = np.stack(ok) if ok else np.empty((0, crop, crop, 3), np.uint8)  # (K, crop, crop, 3): the rows without errors
        table = classify(PixelBatch([""] * len(errs), stacked, errs))
        return pd.DataFrame({f.name: pd.Series(table.column(f.name).to_pylist(), dtype=object) for f in udf_fields(execution)})

    return predict


class WriteParts:
    """``--udf series``, stage 3: rows in the output schema (plus file, row) -> committed parts."""

    def __init__(self, spec: TaskSpec) -> None:
        self.spec = spec

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        execution = self.spec.job.execution
        yield from write_parts(self.spec, ([(0, _embedding_as_planned(pa.Table.from_batches([b]), execution))]
                                           for b in batches))


def _embedding_as_planned(table: pa.Table, execution: Execution) -> pa.Table:
    """The float32 lists Spark carried (``udf_fields``) back to the plan's fixed-size embedding column.

    Through numpy, not an Arrow cast: pyarrow before 16 (Databricks 16.4's 15.0.2) cannot cast
    float to float16.
    """
    if execution.embeddings is None or EMBEDDING not in table.column_names:
        return table
    column = table.column(EMBEDDING).combine_chunks()
    ok = column.is_valid().to_numpy(zero_copy_only=False)
    values = column.filter(pa.array(ok)).flatten().to_numpy(zero_copy_only=False)
    embedding = embedding_column(values.reshape(-1, execution.model.embedding_dim).astype(execution.embeddings), ok)
    return table.set_column(table.schema.get_field_index(EMBEDDING), EMBEDDING, embedding)
