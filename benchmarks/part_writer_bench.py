"""The part writer alone: CPU per row and bytes per 1,000 rows, with and without embeddings.

    python -m benchmarks.part_writer_bench [--rows 2048] [--repeats 5]

Builds one input file's output rows with ``job.output.rows.prediction_table`` (top-5 and random ResNet50-
sized embeddings: |N(0, 1)| as float16 or float32, which compress about as little as real pooled
features) and commits them with ``Parts.write`` into a local temporary prefix, as every engine's
writer does: cast, Parquet serialisation, write, rename. Each variant's best of ``--repeats`` is
kept (process CPU time, so other load on the machine moves it little). One more line writes the
same float16 rows with Parquet's default, a dictionary tried on every column: the choice
``job.output.parts`` made against. The pipeline meter (``benchmarks.pipeline_bench --embeddings``) measures
the same cost inside a whole Ray run, where the driver also receives the rows.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.common import add_results_option, append_result
from job.config import JobConfig
from job.execution import Capabilities, Devices, Execution, decide, model_for
from job.output.parts import Parts
from job.input.plan import InputFile
from job.output.rows import output_schema, prediction_table
from storage import resolve

VARIANTS = {  # name: (--embeddings, --embedding-dtype)
    "predictions only": ("off", "float16"),
    "with embeddings, float16": ("with", "float16"),
    "with embeddings, float32": ("with", "float32"),
    "embeddings only, float16": ("only", "float16"),
}


def plan_for(embeddings: str, dtype: str) -> Execution:
    config = JobConfig(input=None, output=None, weights="random", embeddings=embeddings, embedding_dtype=dtype)
    return decide(config, Capabilities(), Devices("cpu"), 0, model=model_for(config))


def rows_of(execution: Execution, rows: int, random: np.random.Generator) -> pa.Table:
    k, dim = execution.topk, execution.model.embedding_dim
    answers = SimpleNamespace(label=np.zeros(rows, np.int64), score=np.full(rows, 0.5, np.float32),
                              topk_labels=random.integers(0, 1000, (rows, k)), topk_scores=random.random((rows, k), np.float32),
                              embeddings=None)
    if execution.embeddings is not None:
        answers.embeddings = np.abs(random.standard_normal((rows, dim), np.float32)).astype(execution.embeddings)
    if not execution.predictions:
        answers.label = None
    return prediction_table([f"img-{i:08d}" for i in range(rows)], [None] * rows, answers, execution)


def timed(write, repeats: int) -> float:
    """The best CPU seconds of ``repeats`` calls of ``write``."""
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        write()
        best = min(best, time.process_time() - started)
    return best


def measure(name: str, execution: Execution, table: pa.Table, repeats: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="part-writer-") as out:
        output = resolve(out)
        parts = Parts(output, output.join("_staging", "run"), "/in", {}, output_schema(execution))
        file = InputFile("/in/part-00000.parquet", table.num_rows)
        seconds = timed(lambda: parts.write(file, table), repeats)
        size = (resolve(out).filesystem.get_file_info(output.join(parts.name(file)))).size
    return row_of(name, seconds, size, table.num_rows)


def measure_default_parquet(table: pa.Table, repeats: int) -> dict:
    sink = []
    seconds = timed(lambda: sink.append(_default_parquet(table)), repeats)
    return row_of("with embeddings, float16, Parquet's default dictionary on every column", seconds, sink[-1], table.num_rows)


def _default_parquet(table: pa.Table) -> int:
    out = pa.BufferOutputStream()
    pq.write_table(table, out)
    return out.getvalue().size


def row_of(name: str, seconds: float, size: int, rows: int) -> dict:
    return {"variant": name, "cpu_ms_per_row": round(1000 * seconds / rows, 4), "part_kib_per_1000_rows": round(size / 1024 / rows * 1000, 1)}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2048, help="rows in the part (default: 2048)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--note", default="")
    add_results_option(parser)
    args = parser.parse_args(argv)
    random, results = np.random.default_rng(0), []
    for name, options in VARIANTS.items():
        execution = plan_for(*options)
        table = rows_of(execution, args.rows, random)
        results.append(measure(name, execution, table, args.repeats))
        if options == ("with", "float16"):
            results.append(measure_default_parquet(table, args.repeats))
    for result in results:
        print(f"{result['variant']}: {result['cpu_ms_per_row']} CPU ms a row, {result['part_kib_per_1000_rows']} KiB per 1,000 rows")
    append_result(args.results, {"benchmark": "part_writer", "rows": args.rows, "repeats": args.repeats, "results": results,
                                 "note": args.note})
    return results


if __name__ == "__main__":
    main()
