"""Image objects as --input on Ray, on the S3 server: one row per object, a night redoes only their groups."""

from __future__ import annotations

import pytest

from runners import ray_job
from tests.integration import object_scenarios as scenarios

pytestmark = pytest.mark.usefixtures("local_ray")


def test_objects_on_s3_run_as_they_lie_and_a_night_redoes_only_their_groups(s3_bucket, s3_env):
    scenarios.objects_run_as_they_lie_and_a_night_redoes_only_their_groups(ray_job.main, f"s3://{s3_bucket}", s3_env)
