"""Build a job's ``Parts`` and stand-in prediction rows, for tests of committing and resuming."""

from __future__ import annotations

import pyarrow as pa

from runners import commit
from runners.job import JobConfig
from runners.output import OUTPUT_SCHEMA
from runners.source import InputFile, plan_input
from storage import resolve


def predictions(ids: list[str]) -> pa.Table:
    """Output rows for ``ids``, all errors (their content does not matter to committing)."""
    n = len(ids)
    columns = [pa.array(ids, pa.string()), *(pa.nulls(n, f.type) for f in list(OUTPUT_SCHEMA)[1:-1]), pa.array(["x"] * n)]
    return pa.Table.from_arrays(columns, schema=OUTPUT_SCHEMA)


def job_parts(input_uri: str, output_uri: str, endpoint: str | None = None, **options) -> tuple[commit.Parts, tuple[InputFile, ...]]:
    """The ``Parts`` a job with these options would commit through, and its planned files."""
    config = JobConfig(input=input_uri, output=output_uri, weights="random", s3_endpoint_url=endpoint, **options)
    plan = plan_input(resolve(input_uri, endpoint), config)
    output = resolve(output_uri, endpoint)
    return commit.Parts(output, output.join(commit.STAGING, "run"), plan.location.path, commit.output_options(config, plan)), plan.files
