"""Fixtures the integration modules share across the session."""

from __future__ import annotations

import pytest

from tests.common.every_engine import EveryEngine, run_every_engine


@pytest.fixture(scope="session")
def every_engine(tmp_path_factory) -> EveryEngine:
    """All four engines once over one checkpoint and one input (tests.common.every_engine)."""
    return run_every_engine(tmp_path_factory.mktemp("every-engine"))
