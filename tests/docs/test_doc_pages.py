"""The docs' shape: README.md is a short landing page, the pages hold no history, and docs/options.md names every option.

History (commit hashes, issue numbers, what a round measured) lives in CHANGELOG.md and BENCHMARKS.md; README.md and
docs/ describe the project as it is. Every option a command's ``--help`` prints has its line in docs/options.md.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.doc_commands import REPO

README_MAX_LINES = 250
README_MAX_LINE_CHARS = 160
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
HEX_WORD = re.compile(r"\b[0-9a-f]{7,40}\b")
ISSUE = re.compile(r"\b(?:issues?|PR) #?\d+", re.IGNORECASE)
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9]")
COMMANDS = ("runners.ray_job", "runners.spark_job", "runners.sagemaker_job", "runners.local_job", "runners.compare",
            "runners.make_dataset", "runners.capacity", "runners.history")


def _page_id(page: Path) -> str:
    return str(page.relative_to(REPO))


def test_readme_is_a_short_landing_page():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move reference material to docs/"
    long = [f"line {n}: {len(line)} characters" for n, line in enumerate(lines, 1) if len(line) > README_MAX_LINE_CHARS]
    assert not long, "README.md lines over 160 characters:\n" + "\n".join(long)


@pytest.fixture(scope="module")
def commits() -> set[str]:
    """Every commit the checkout knows, in full; none (the test then has nothing to find) outside a git checkout."""
    listed = subprocess.run(["git", "rev-list", "--all"], cwd=REPO, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.strip()}")
    return set(listed.stdout.split())


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_page_names_no_commit(page, commits):
    named = [word for word in set(HEX_WORD.findall(page.read_text())) if any(c.startswith(word) for c in commits)]
    assert not named, f"{_page_id(page)} names commits {sorted(named)}: history goes in CHANGELOG.md"


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_page_names_no_issue(page):
    named = ISSUE.findall(page.read_text())
    assert not named, f"{_page_id(page)} names issues {named}: history goes in CHANGELOG.md"


def test_the_history_check_finds_a_commit(commits):
    """The check above is not vacuous: a page naming the checkout's newest commit would fail it."""
    newest = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.strip()
    assert HEX_WORD.findall(f"fixed in {newest}.") == [newest] and any(c.startswith(newest) for c in commits)


@pytest.mark.parametrize("command", COMMANDS)
def test_options_page_names_every_option(command):
    wide = {**os.environ, "COLUMNS": "1000"}  # argparse wraps at the terminal's width, even inside an option's name
    shown = subprocess.run([sys.executable, "-m", command, "--help"], cwd=REPO, env=wide, capture_output=True,
                           text=True, check=True).stdout
    options = set(OPTION.findall(shown)) - {"--help"}
    assert options, f"{command} --help shows no option:\n{shown}"
    page = (REPO / "docs" / "options.md").read_text()
    missing = sorted(o for o in options if not re.search(re.escape(o) + r"(?![\w-])", page))
    assert not missing, f"docs/options.md does not name {command}'s {missing}"
