"""Fixtures the integration modules share across the session, and across pytest-xdist's workers."""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from filelock import FileLock

from tests.common.every_engine import EveryEngine, run_every_engine
from tests.common.model_sources import SourceCase, write_source_case

T = TypeVar("T")


@pytest.fixture(scope="session")
def every_engine(tmp_path_factory) -> EveryEngine:
    """All four engines once over one checkpoint and one input (tests.common.every_engine)."""
    return once_per_run(tmp_path_factory, "every-engine", run_every_engine)


@pytest.fixture(scope="session")
def source_case(tmp_path_factory) -> SourceCase:
    """One input and every model source's model, with each model's own reference answers (tests.common.model_sources)."""
    return once_per_run(tmp_path_factory, "model-sources", write_source_case)


def once_per_run(tmp_path_factory, name: str, make: Callable[[Path], T]) -> T:
    """``make(a new folder)``, once for the whole pytest run: under pytest-xdist the first worker to ask makes
    it (the others wait on a lock) and the others read its pickled result, so the engines run once, not once a worker."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return make(tmp_path_factory.mktemp(name))
    shared = tmp_path_factory.getbasetemp().parent  # the one folder every worker's base temp lies in
    made = shared / f"{name}.pickle"
    with FileLock(str(shared / f"{name}.lock")):
        if not made.exists():
            made.write_bytes(pickle.dumps(make(shared / name)))
    return pickle.loads(made.read_bytes())
