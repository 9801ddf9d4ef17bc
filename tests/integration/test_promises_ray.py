"""The first four of a night's promises on Ray, one Ray for the module (tests/integration/promises_scenarios.py): the
nights that die run as child processes, each with a local Ray of its own; the others here."""

from __future__ import annotations

import pytest

from runners import ray_job
from tests.integration import promises_scenarios as promises

pytestmark = pytest.mark.usefixtures("local_ray")


def test_the_first_four_promises_on_ray(tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)  # each killed night starts a Ray of its own, never joins this one
    promises.the_first_four_on_an_engine(ray_job.main, "runners.ray_job", str(tmp_path), None, "iceberg",
                                         tmp_path / "failpoints")


def test_a_dry_run_on_ray_announces_exactly_what_the_night_scores(tmp_path):
    """--dry-run starts no engine: what it announces is held to the next night's on Ray (dry_run_scenarios.py)."""
    from tests.integration import dry_run_scenarios as dry

    dry.a_dry_run_announces_what_the_night_scores(ray_job.main, str(tmp_path), None, "delta")
