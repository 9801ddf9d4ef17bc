"""The two stages of every job, as plain callables the engines wrap.

- ``Preprocess`` (CPU; no torch): an input file (or a record batch) -> ``PixelBatch`` (every
  row decoded here: ``--decode cpu``, and raw pixels) or ``SplitBatch`` (``--decode gpu|auto``:
  each JPEG screened, decoded here or left encoded for the device, by ``preprocess.routing``).
- ``Classify`` (the model's device): either batch -> the output rows (``job.output.rows``), by type:
  predictions with class names and/or embeddings, as the plan says.
Both take the run's ``Execution`` (``job.execution``), which the driver decided once: the model
(weights, class names, recipe), the decode mode, the device, batch size, precision, compile and
the outputs; neither decides any.
A model call past ``--batch-timeout`` is retried once, then its rows become error rows naming the
limit and the night goes on (``Classify``): a stuck call (a kernel that never returns) cannot
be stopped from Python, so it is left running in its own daemon thread, and the worker moves on.
Ray wraps each in an actor pool, Spark calls both in one Arrow UDF, SageMaker's handler calls
both per request, the local baseline calls them in DataLoader workers and the main process.
State (the model, the decode router) lives in ``__init__``: built once per worker.
"""

from __future__ import annotations

import functools
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from job.config import JobConfig
from job.errors import DataError, SetupError
from job.execution import Execution
from job.output.parts import failure_positions, positions, with_position
from job.input.objects import READ_ERROR
from job.input.plan import SHAPE_COLUMNS, InputPlan, read_planned
from job.output.rows import TIMED_OUT, error_table, output_schema, prediction_table
from job.timeline import with_model_time
from preprocess import preprocess_batch
from preprocess.batch import preprocess_many
from preprocess.recipe import Recipe
from preprocess.split_decode import RoutedBatch, preprocess_routed
from preprocess.routing import DecodeRouter, DeviceFeedback

if TYPE_CHECKING:
    import torch

    from preprocess.device_stage import DeviceStage

FeedbackSource = Callable[[], "DeviceFeedback | None"]  # the device's latest word, or None: nothing new


@dataclass
class PixelBatch:
    """Rows decoded, resized and cropped on a CPU."""

    ids: list[str]
    pixels: np.ndarray  # (K, crop, crop, 3) uint8: the rows whose error is None, in row order
    errors: list[str | None]  # (N,) None: classified; else why not (the row's output error)
    files: np.ndarray | None = None  # (N,) int32: each row's input file (index in the plan); None: no parts (SageMaker)
    rows: np.ndarray | None = None  # (N,) int64: each row's position in its file
    # Several models (job.several): which of the run's recipes made these pixels, and, on one batch of the rows
    # (the first recipe's), the decodes they took and their seconds: the run's timeline counts them once.
    group: int = 0
    decodes: int = 0
    decode_seconds: float = 0.0


@dataclass
class SplitBatch:
    """``--decode gpu|auto``: rows decoded on a CPU and JPEGs left encoded for the model's device."""

    ids: list[str]
    routed: RoutedBatch  # errors, the CPU-decoded rows and pixels, the device rows and their bytes
    files: np.ndarray | None = None
    rows: np.ndarray | None = None


Batch = PixelBatch | SplitBatch


class Preprocess:
    """Decode, resize and crop the image column on this CPU, or route JPEGs to the device."""

    def __init__(self, config: JobConfig, execution: Execution, feedback: FeedbackSource | None = None,
                 recipes: Sequence[Recipe] | None = None) -> None:
        self.config = config
        self.recipe = execution.recipe
        # Several models (job.several): their distinct recipes, each image decoded once for all it can share.
        self.recipes = tuple(recipes) if recipes else (execution.recipe,)
        self.cpu_resize = execution.cpu_resize
        self.router = DecodeRouter(execution.decode)
        # --decode auto on an engine that adapts: the device's word on how hungry it is, asked per batch.
        self.feedback = feedback if execution.auto_adapts else None

    def read(self, plan: InputPlan, index: int, batch_rows: int, groups: Sequence[int] | None = None) -> Iterator[Batch]:
        """The plan's ``index``-th input file, ``batch_rows`` rows per batch, each row with its position; ``groups``:
        several models' recipes this file's rows are made in (None: the one recipe), a batch each.

        A ``DataError`` reading it (a damaged page, a null id) ends the file with one ``FAILED``
        row carrying the error, which the part collector raises (``job.output.parts``).
        """
        try:
            for start, ids, records in read_planned(plan, index, batch_rows):
                files, rows = positions(index, start, len(ids))
                if groups is None:
                    yield self(ids, records, files, rows)
                else:
                    yield from self.several(ids, records, files, rows, groups)
                self.listen()
        except DataError as e:
            yield PixelBatch([""], np.empty((0, self.recipe.crop, self.recipe.crop, 3), np.uint8), [str(e)], *failure_positions())

    def several(self, ids: list[str], records: pa.RecordBatch | pa.Table, files: np.ndarray | None,
                rows: np.ndarray | None, groups: Sequence[int]) -> list[PixelBatch]:
        """The rows in each of several recipes (``groups``: indices into ``recipes``) from one decode each where they can
        share it (``preprocess.batch.preprocess_many``): a batch a recipe, the decodes counted on the first."""
        raw = self._raw(records)
        cells = image_cells(records.column(self.config.image_column), raw=raw is not None)
        began = time.perf_counter()
        made = preprocess_many(cells, [self.recipes[g] for g in groups], raw_shapes=raw, max_pixels=self.config.max_pixels,
                               cpu_resize=self.cpu_resize)
        seconds = time.perf_counter() - began
        errors = read_errors(records, made.batches[0].errors)
        out = []
        for number, (group, done) in enumerate(zip(groups, made.batches)):
            pixels = done.pixels if done.ok.all() else done.pixels[done.ok]
            out.append(PixelBatch(ids, pixels, errors, files, rows, group, made.decodes if number == 0 else 0,
                                  seconds if number == 0 else 0.0))
        return out

    def listen(self) -> None:
        """Between batches: the device's latest word (``--decode auto``) moves the router's split."""
        device = self.feedback() if self.feedback is not None else None
        if device is not None:
            self.router.feedback(device)

    def __call__(self, ids: list[str], records: pa.RecordBatch | pa.Table, files: np.ndarray | None = None,
                 rows: np.ndarray | None = None) -> Batch:
        raw = self._raw(records)
        cells = image_cells(records.column(self.config.image_column), raw=raw is not None)
        if raw is None and self.router.mode != "cpu":
            routed = preprocess_routed(cells, self.router, self.recipe, max_pixels=self.config.max_pixels,
                                       cpu_resize=self.cpu_resize)
            routed.errors = read_errors(records, routed.errors)
            return SplitBatch(ids, routed, files, rows)
        out = preprocess_batch(cells, self.recipe, raw_shapes=raw, max_pixels=self.config.max_pixels,
                               cpu_resize=self.cpu_resize)
        pixels = out.pixels if out.ok.all() else out.pixels[out.ok]
        return PixelBatch(ids, pixels, read_errors(records, out.errors), files, rows)

    def _raw(self, records: pa.RecordBatch | pa.Table) -> list[tuple[int, int, int]] | None:
        if self.config.raw_shape is not None:
            return [self.config.raw_shape] * records.num_rows
        if all(c in records.schema.names for c in SHAPE_COLUMNS):
            return list(zip(*(records.column(c).to_pylist() for c in SHAPE_COLUMNS)))
        return None


class Classify:
    """Run the model on the rows that decoded and build their output rows."""

    def __init__(self, config: JobConfig, execution: Execution, gpu_ids: list[int] | None = None) -> None:
        # Imported here: the CPU stage (Preprocess) must not pay for torch in every decoder process.
        from inference import Predictor, load_model

        self.config = config
        self.execution = execution
        model = load_model(execution.model, s3_endpoint_url=config.s3_endpoint_url)  # the model the driver described
        self.limited = TimeLimited(config.batch_timeout)
        self.predictor = Predictor(model, planned_device(execution, gpu_ids), execution.precision, execution.topk,
                                   predictions=execution.predictions, embeddings=execution.embeddings,
                                   compile=execution.compile, batch_size=execution.batch_size)

    @functools.cached_property
    def device_stage(self) -> DeviceStage:
        """The device's decode + resize (``--decode gpu|auto``), made at the first batch that needs it."""
        from preprocess.device_stage import DeviceStage

        return DeviceStage(self.predictor.device, self.execution.recipe, max_pixels=self.config.max_pixels,
                           cpu_resize=self.execution.cpu_resize)

    def __call__(self, batch: Batch) -> pa.Table:
        """The output rows of ``batch``, with its input files and positions when it has them, and
        the model's time spread over its rows and its end (``job.timeline.with_model_time``: the job's timeline).

        A call past ``--batch-timeout`` is tried once more; past it again, the rows that would have
        been predicted get an error naming the limit (rows already in error keep theirs).
        """
        started = time.perf_counter()
        table = self.limited(lambda: self._predict(batch))
        if table is None:  # once more: a stall of the node (a GPU reset, a swap storm) may have passed
            table = self.limited(lambda: self._predict(batch))
        if table is None:
            errors = batch.errors if isinstance(batch, PixelBatch) else batch.routed.errors
            late = f"{TIMED_OUT}: over --batch-timeout {self.limited.limit_s:g} s, twice"
            table = error_table(batch.ids, [error or late for error in errors], output_schema(self.execution))
        table = with_model_time(table, time.perf_counter() - started)
        return table if batch.files is None else with_position(table, batch.files, batch.rows)

    def _predict(self, batch: Batch) -> pa.Table:
        if isinstance(batch, SplitBatch):
            return self._classify_split(batch.ids, batch.routed)
        return prediction_table(batch.ids, batch.errors, self.predictor(batch.pixels), self.execution)

    def _classify_split(self, ids: Sequence[str], routed: RoutedBatch) -> pa.Table:
        """Decode the JPEGs on the device, join the CPU's pixels, one model call, in the predictor's stream."""
        with self.predictor.stream():
            images = self.device_stage(routed)
            predictions = self.predictor.predict_images(images.images)
        return prediction_table(ids, images.errors, predictions, self.execution)


# Seconds a Ctrl-C waits for the model call in flight (a healthy batch takes a few at most, even on a CPU).
INTERRUPT_GRACE_S = 10.0


class TimeLimited:
    """``limited(call)``: ``call()``, or None when it takes more than ``limit_s`` seconds; its exception is raised here.

    Each calling thread hands its calls to a worker thread of its own, kept from call to call (the
    predictor keeps one CUDA stream per thread: a new thread a call would make a new stream a
    batch). Past the limit the call is abandoned, not stopped (Python cannot stop a thread): its
    daemon thread finishes, or hangs, in the background, and the next call gets a new one.
    """

    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self._workers = threading.local()

    def __call__(self, call: Callable[[], pa.Table]) -> pa.Table | None:
        worker = getattr(self._workers, "worker", None)
        if worker is None:
            worker = self._workers.worker = _Worker()
        outcome = worker.run(call, self.limit_s)
        if outcome is None:
            self._workers.worker = None  # stuck in the call: left behind
            return None
        value, error = outcome
        if error is not None:
            raise error
        return value


class _Worker:
    """A daemon thread that runs one call at a time for one calling thread."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="model-call", daemon=True).start()

    def run(self, call: Callable[[], pa.Table], limit_s: float) -> tuple | None:
        done, outcome = threading.Event(), []
        self._calls.put((call, done, outcome))
        try:
            finished = done.wait(limit_s)
        except KeyboardInterrupt:
            # Ctrl-C while the model runs: let the call end before the interpreter exits. A daemon thread still
            # inside torch at exit is unwound through C++ frames that cannot be unwound: the process aborts
            # ("terminate called without an active exception") instead of exiting 130. A second Ctrl-C skips this.
            done.wait(INTERRUPT_GRACE_S)
            raise
        return outcome[0] if finished else None

    def _serve(self) -> None:
        while True:
            call, done, outcome = self._calls.get()
            try:
                outcome.append((call(), None))
            except BaseException as e:  # handed to the calling thread, raised there
                outcome.append((None, e))
            done.set()
            # Not held while waiting for the next call: the call's closure holds the stage and its model, and this
            # thread outlives the run (a process running several jobs, a test session, kept every model it ran).
            del call, done, outcome


def planned_device(execution: Execution, gpu_ids: list[int] | None = None) -> torch.device:
    """The device the plan says this predictor runs on; refuses a GPU plan where CUDA is not usable.

    A torch built for a newer CUDA than the node's driver sees no GPU and would run the model on
    the CPU without a word: this makes that one line instead.
    """
    import torch

    from inference import choose_device

    device = choose_device(gpu_ids) if execution.device == "cuda" else torch.device("cpu")
    if device.type != execution.device:
        raise SetupError(f"the run was planned on a GPU, but CUDA is not usable in this worker (torch {torch.__version__}, "
                       f"CUDA build {torch.version.cuda}): install a torch built for this node's CUDA driver, or run without GPUs")
    return device


def read_errors(records: pa.RecordBatch | pa.Table, errors: list[str | None]) -> list[str | None]:
    """``errors``, with why an image object could not be read (``job.input.objects``) in place of its null cell's error."""
    if READ_ERROR not in records.schema.names:
        return errors
    unread = records.column(READ_ERROR).to_pylist()
    return [why if why is not None else error for why, error in zip(unread, errors)]


def image_cells(column: pa.ChunkedArray | pa.Array, *, raw: bool) -> list:
    """The image column as Python cells: bytes for encoded images, uint8 arrays for raw lists."""
    type_ = column.type.storage_type if isinstance(column.type, pa.ExtensionType) else column.type
    if pa.types.is_binary(type_) or pa.types.is_large_binary(type_) or pa.types.is_binary_view(type_):
        return column.to_pylist()
    if raw and (pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_fixed_size_list(type_)):
        return _list_cells(column)
    raise SetupError(f"image column has type {column.type}; expected binary image bytes, or a uint8 list with --raw-shape")


def _list_cells(column: pa.ChunkedArray | pa.Array) -> list[np.ndarray | None]:
    """Zero-copy uint8 views of each list cell (raw pixels), None for null cells."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if isinstance(array, pa.ExtensionArray):
        array = array.storage
    if pa.types.is_fixed_size_list(array.type):
        array = array.cast(pa.list_(array.type.value_type))
    offsets = array.offsets.to_numpy()
    values = array.values.to_numpy(zero_copy_only=False)
    valid = array.is_valid().to_numpy(zero_copy_only=False)
    return [values[offsets[i] : offsets[i + 1]] if valid[i] else None for i in range(len(array))]
