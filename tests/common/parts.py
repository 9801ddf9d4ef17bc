"""Build a job's ``Parts`` and stand-in prediction rows, for tests of committing and resuming."""

from __future__ import annotations

import pyarrow as pa

from job.night.manifest import Counts, InputFiles, Manifest
from job.timeline import Timeline
from job.output.parts import STAGING, Parts, output_options
from job.config import JobConfig
from job.output.rows import error_table, output_schema
from job.input.plan import InputFile
from job.prepare import plan_input
from storage import resolve
from tests.common.plans import cpu_execution


def predictions(ids: list[str]) -> pa.Table:
    """Output rows for ``ids`` of a default job, all errors (their content does not matter to committing)."""
    config = JobConfig(input=None, output=None, weights="random")
    return error_table(ids, ["x"] * len(ids), output_schema(cpu_execution(config)))


def job_parts(input_uri: str, output_uri: str, endpoint: str | None = None, **options) -> tuple[Parts, tuple[InputFile, ...]]:
    """The ``Parts`` a job with these options would commit through, and its planned files."""
    config = JobConfig(input=input_uri, output=output_uri, weights="random", s3_endpoint_url=endpoint, **options)
    plan = plan_input(resolve(input_uri, endpoint), config)
    output = resolve(output_uri, endpoint)
    execution = cpu_execution(config)
    options = output_options(config, plan, execution)
    return Parts(output, output.join(STAGING, "run"), plan.location.path, options, output_schema(execution)), plan.files


def a_manifest(**changes) -> Manifest:
    """A manifest as a finished job writes it (fields a test does not care about filled in)."""
    fields = dict(engine="test", run_id="run", input="in", output="out", config={}, execution={}, output_options={},
                  counts=Counts(1, 1, 1, 0), input_files=InputFiles(1, 0, 1, 1), seconds=1.0, images_per_sec=1.0,
                  timeline=Timeline(1.0, None, None, 2.0), files=[], error_examples=[], versions={}, hardware={})
    return Manifest(**{**fields, **changes})
