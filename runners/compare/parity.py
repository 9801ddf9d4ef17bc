"""Parity: do several engines' outputs agree row by row?

Use after running engines on the same input with the same weights (``runners.compare``
does). Each finished output prefix is read through its manifest (only the files it lists,
as any reader should). Every id is compared across engines: an id one engine lacks, a
different top-1 label, or a row one engine classified and another errored is a mismatch.
Scores are not compared: batches are cut differently per engine, which moves float
rounding a little; the label is the decision the job reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow.parquet as pq

from job.manifest import read_manifest
from storage import resolve, storage_errors

MAX_EXAMPLES = 5
MISSING = "missing"
ERRORED = "errored"


@dataclass
class Parity:
    ok: bool
    mismatches: int  # ids on which the engines do not all agree
    rows: int  # ids compared: every id any engine wrote
    engines: list[str]
    examples: list[dict] = field(default_factory=list)  # {"id": ..., engine: "label 7" | "error: ..." | "missing"}


Outcome = tuple[int | None, str | None]  # (label, error) of one output row


def read_outcomes(uri: str, s3_endpoint_url: str | None = None) -> dict[str, Outcome]:
    """{id: (label, error)} for every row of a finished output prefix."""
    location = resolve(uri, s3_endpoint_url)
    files = read_manifest(location).files
    with storage_errors(location.uri):
        table = pq.read_table([location.join(name) for name in files], filesystem=location.filesystem,
                              columns=["id", "label", "error"])
    columns = table.to_pydict()
    return dict(zip(columns["id"], zip(columns["label"], columns["error"])))


def check_parity(outcomes: dict[str, dict[str, Outcome]]) -> Parity:
    """Compare the engines' {id: (label, error)}; ``outcomes`` maps engine -> its rows."""
    engines = list(outcomes)
    ids = sorted(set().union(*outcomes.values())) if outcomes else []
    mismatched = [i for i in ids if len({_decision(rows.get(i)) for rows in outcomes.values()}) > 1]
    examples = [{"id": i, **{e: _describe(outcomes[e].get(i)) for e in engines}} for i in mismatched[:MAX_EXAMPLES]]
    return Parity(ok=not mismatched, mismatches=len(mismatched), rows=len(ids), engines=engines, examples=examples)


def _decision(outcome: Outcome | None) -> object:
    """What must agree: the label, or that the row errored (error texts may be worded apart)."""
    if outcome is None:
        return MISSING
    label, error = outcome
    return ERRORED if error is not None else label


def _describe(outcome: Outcome | None) -> str:
    if outcome is None:
        return MISSING
    label, error = outcome
    return f"error: {error}" if error is not None else f"label {label}"
