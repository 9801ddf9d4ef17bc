"""Every job's ``--help``: options grouped as a user decides them, defaults printed by the formatter, three examples."""

from __future__ import annotations

import argparse
import re

import pytest

from runners import ENGINES
from tests.common.extras import engine_or_skip as engine

# The shared groups, in the order --help prints them, and an option each must hold.
GROUPS = {"input": "--input", "output and table": "--table-format", "re-runs": "--incremental", "model": "--weights",
          "recipe": "--crop", "execution": "--decode", "what the command prints": "--verbose"}


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_help_groups_the_options_and_ends_with_three_examples(name):
    parser = engine(name).args_parser()
    groups = [g for g in parser._action_groups if g.title not in ("positional arguments", "options")]
    titles = [g.title for g in groups]
    assert titles[: len(GROUPS)] == list(GROUPS) and titles[len(GROUPS):] == [name], titles  # the engine's group last
    for group in groups[: len(GROUPS)]:
        assert GROUPS[group.title] in {o for a in group._group_actions for o in a.option_strings}
    reruns = {o for a in groups[2]._group_actions for o in a.option_strings}
    assert reruns == {"--incremental", "--resume", "--overwrite", "--keep-removed", "--rollout-files", "--rollout-time",
                      "--dry-run", "--price-per-hour"}
    shown = parser.format_help()
    examples = shown.split("\nexamples:\n", 1)[1]
    commands = [line.strip() for line in examples.splitlines() if line.strip().startswith(f"python -m {engine(name).module}")]
    assert len(commands) == 3 and "--incremental" in commands[1] and "--weights" in commands[2]
    assert "not yet" not in shown


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_defaults_come_from_the_formatter_not_the_help_texts(name):
    parser = engine(name).args_parser()
    written = [a.option_strings[0] for a in parser._actions if a.help and re.search(r"\(default[:)]", a.help)]
    assert written == [], f"help texts that write their own default: {written}"
    shown = re.sub(r"\s+", " ", parser.format_help())
    assert "(default: parquet)" in shown and "(default: off)" in shown and "(default: None)" not in shown
    assert "(default: False)" not in shown


def test_the_formatter_shows_a_default_only_where_it_says_something():
    parser = argparse.ArgumentParser(formatter_class=engine("local").args_parser().formatter_class)
    parser.add_argument("--size", type=int, default=3, help="how big")
    parser.add_argument("--name", help="a name; not given: the file's")
    parser.add_argument("--flag", action="store_true", help="a switch")
    shown = re.sub(r"\s+", " ", parser.format_help())
    assert "how big (default: 3)" in shown and "not given: the file's --flag" in shown and "a switch" in shown
