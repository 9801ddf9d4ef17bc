"""Parity: do several engines' outputs agree row by row?

Use after running engines on the same input with the same options (``runners.compare`` does).
Each finished output prefix is read through its manifest (only the files it lists, as any
reader should). Every id is compared across engines: an id one engine lacks, a different top-1
label or label name, a row one engine classified and another errored, a different lineage (the
input file it came from, the model that made it: not the run or the time, which differ by run), or
an embedding that points elsewhere than the first engine's is a mismatch.
Scores are not compared: batches are cut differently per engine, which moves float
rounding a little; the label is the decision the job reports. Embeddings are compared by
direction (cosine), which that rounding and float16 storage barely move, twice: as they are
(at least ``MIN_COSINE``), and taken from the first engine's mean embedding (at least
``MIN_CENTRED_COSINE``). The second catches rows whose embeddings were swapped: the pooled
features of random or seeded weights (what throughput runs use) share most of their direction,
two different photos at cosine 0.9996, and only their difference from the mean tells them apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from job.night.manifest import read_manifest
from job.output.rows import EMBEDDING, SOURCE
from storage import resolve, storage_errors

MAX_EXAMPLES = 5
MISSING = "missing"
ERRORED = "errored"
# The same image's pooled feature from two engines on CPU: float32 rounding and float16 storage
# leave cosine > 0.9999; a different recipe or model gives far less.
MIN_COSINE = 0.999
# From the mean: the same image decoded by the CPU and the device paths (pixels apart by resampling
# rounding) stays above 0.995 with random weights; different photos fall below 0.9.
MIN_CENTRED_COSINE = 0.99


@dataclass
class Parity:
    ok: bool
    mismatches: int  # ids on which the engines do not all agree
    rows: int  # ids compared: every id any engine wrote
    engines: list[str]
    examples: list[dict] = field(default_factory=list)  # {"id": ..., engine: "label 7 (cat)" | "error: ..." | "missing"}
    min_embedding_cosine: float | None = None  # the lowest cosine to the first engine's embedding; None: no embeddings
    min_centred_cosine: float | None = None  # the same, both taken from the first engine's mean embedding


@dataclass(frozen=True)
class Outcome:
    """One output row, as parity compares it."""

    label: int | None  # None: errored, or no prediction columns (--embeddings only)
    label_name: str | None
    error: str | None
    embedding: np.ndarray | None = None  # (D,) float32; None: errored, or no embedding column
    lineage: tuple[str | None, str | None] = (None, None)  # (source_file, model): the same from every engine


def read_outcomes(uri: str, s3_endpoint_url: str | None = None) -> dict[str, Outcome]:
    """{id: Outcome} for every row of a finished output prefix."""
    location = resolve(uri, s3_endpoint_url)
    files = read_manifest(location).files
    paths = [location.join(name) for name in files]
    with storage_errors(location.uri):
        present = pq.read_schema(paths[0], filesystem=location.filesystem).names if paths else []
        wanted = [c for c in ("id", "label", "label_name", "error", EMBEDDING, SOURCE, "model") if c in present]
        table = pq.read_table(paths, filesystem=location.filesystem, columns=wanted)
    columns = {name: table.column(name).to_pylist() for name in wanted if name != EMBEDDING}
    nothing = [None] * table.num_rows
    embeddings = _embeddings(table.column(EMBEDDING)) if EMBEDDING in wanted else nothing
    lineage = zip(columns.get(SOURCE, nothing), columns.get("model", nothing))
    rows = zip(columns.get("label", nothing), columns.get("label_name", nothing), columns["error"], embeddings, lineage)
    return dict(zip(columns["id"], (Outcome(*row) for row in rows)))


def _embeddings(column: pa.ChunkedArray) -> list[np.ndarray | None]:
    """Each row's embedding as float32 (None for null rows), from the fixed-size list's one buffer."""
    array = column.combine_chunks()
    dim = array.type.list_size
    values = array.values.to_numpy(zero_copy_only=False)[array.offset * dim:(array.offset + len(array)) * dim]
    matrix = values.astype(np.float32).reshape(len(array), dim)
    valid = array.is_valid().to_numpy(zero_copy_only=False)
    return [matrix[i] if valid[i] else None for i in range(len(array))]


def check_parity(outcomes: dict[str, dict[str, Outcome]]) -> Parity:
    """Compare the engines' {id: Outcome}; ``outcomes`` maps engine -> its rows."""
    engines = list(outcomes)
    ids = sorted(set().union(*outcomes.values())) if outcomes else []
    centre = _mean_embedding(outcomes[engines[0]]) if engines else None
    cosines = {i: _lowest_cosines([rows.get(i) for rows in outcomes.values()], centre) for i in ids}
    cosines = {i: pair for i, pair in cosines.items() if pair is not None}
    apart = {i for i, (raw, centred) in cosines.items() if raw < MIN_COSINE or centred < MIN_CENTRED_COSINE}
    mismatched = [i for i in ids if i in apart or len({_decision(rows.get(i)) for rows in outcomes.values()}) > 1]
    examples = [{"id": i, **{e: _describe(outcomes[e].get(i)) for e in engines},
                 **({"embedding_cosine": round(cosines[i][0], 6), "centred_cosine": round(cosines[i][1], 6)} if i in apart else {})}
                for i in mismatched[:MAX_EXAMPLES]]
    raw, centred = zip(*cosines.values()) if cosines else ((), ())
    return Parity(ok=not mismatched, mismatches=len(mismatched), rows=len(ids), engines=engines, examples=examples,
                  min_embedding_cosine=round(min(raw), 6) if raw else None,
                  min_centred_cosine=round(min(centred), 6) if centred else None)


def _mean_embedding(rows: dict[str, Outcome]) -> np.ndarray | None:
    """The mean of an engine's embeddings, when it has two or more (one row has no spread to keep)."""
    vectors = [row.embedding for row in rows.values() if row.embedding is not None]
    return np.mean(vectors, axis=0) if len(vectors) > 1 else None


def _lowest_cosines(rows: list[Outcome | None], centre: np.ndarray | None) -> tuple[float, float] | None:
    """The lowest cosine of each engine's embedding to the first one's: as they are, and both less
    ``centre`` (as they are when there is none); None when fewer than two engines have one."""
    vectors = [row.embedding for row in rows if row is not None and row.embedding is not None]
    if len(vectors) < 2:
        return None
    centred = vectors if centre is None else [v - centre for v in vectors]
    return _lowest_to_first(vectors), _lowest_to_first(centred)


def _lowest_to_first(vectors: list[np.ndarray]) -> float:
    first = vectors[0] / (np.linalg.norm(vectors[0]) or 1.0)
    return float(min(np.dot(first, v) / (np.linalg.norm(v) or 1.0) for v in vectors[1:]))


def _decision(outcome: Outcome | None) -> object:
    """What must agree: the label and its name, or that the row errored (error texts may be worded apart); the lineage."""
    if outcome is None:
        return MISSING
    return (ERRORED if outcome.error is not None else (outcome.label, outcome.label_name)), outcome.lineage


def _describe(outcome: Outcome | None) -> str:
    if outcome is None:
        return MISSING
    if outcome.error is not None:
        return f"error: {outcome.error}"
    return f"label {outcome.label}" + (f" ({outcome.label_name})" if outcome.label_name is not None else "")
