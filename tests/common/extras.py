"""Skip a test, naming the ``pip install`` that enables it, when this Python lacks an extra it runs with.

Use it in tests that start an engine's command or import its module: the core install
(``pip install -e '.[test]'``) then runs every other unit test and names what it left out.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

import pytest

from job.engine import Engine
from runners import EXTRAS, MissingExtra, engine, missing_extra


def skip_without(extra: str) -> None:
    """Skip the calling test when a module of ``extra`` (``runners.EXTRAS``) cannot be imported here."""
    error = missing_extra(extra)
    if error is not None:
        pytest.skip(str(error))


def skip_unless_first_missing(extra: str, hidden: str) -> None:
    """Skip when a module ``extra`` lists before ``hidden`` is missing here: a hiding test's line would name that one."""
    modules = EXTRAS[extra]
    before = [m for m in modules[: modules.index(hidden)] if importlib.util.find_spec(m) is None]
    if before:
        pytest.skip(f"{', '.join(before)} not installed: the [{extra}] extra's line would name {before[0]!r}, not "
                    f"{hidden!r}; install it with `pip install -e '.[{extra}]'`")


def engine_or_skip(name: str) -> Engine:
    """The engine called ``name``; the test is skipped, naming the install, where its extra is missing here."""
    try:
        return engine(name)
    except MissingExtra as e:
        pytest.skip(str(e))


def module_or_skip(name: str) -> ModuleType:
    """The module ``name`` (a command's, which needs its extra); skipped, naming the install, where that is missing."""
    try:
        return importlib.import_module(name)
    except MissingExtra as e:
        pytest.skip(str(e))


def library_or_skip(module: str, extra: str) -> None:
    """Skip the calling test, naming the install, when the model library ``module`` (of ``extra``) is missing here."""
    pytest.importorskip(module, reason=f"{module} is not installed: pip install -e '.[{extra}]'")
