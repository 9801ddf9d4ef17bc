"""Image objects as --input on the local engine, in a local folder and on the S3 server."""

from __future__ import annotations

from runners import local_job
from tests.integration import object_scenarios as scenarios


def test_objects_run_as_they_lie_and_a_night_redoes_only_their_groups(data_root):
    root, endpoint = data_root
    scenarios.objects_run_as_they_lie_and_a_night_redoes_only_their_groups(local_job.main, root, endpoint, "--workers", "0")
