"""Every command line the docs show a user: found in README.md, BENCHMARKS.md and every docs/*.md.

``doc_commands()`` reads code blocks (fenced, and indented by four spaces) and inline code spans,
and keeps what starts with a program a user would type (``python -m ...``, ``bash ...``, ``pip``,
``ray``, ``terraform``...), continuation lines joined; output shown in code blocks is not a command.
``tests/docs/test_doc_commands.py`` holds each one to a verdict: run it (on a fresh copy of the
repository), or skip it for a reason it names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# A new page under docs/ is a doc as soon as it exists: its commands need verdicts at once.
DOCS = ("README.md", "BENCHMARKS.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md")))
PROGRAMS = ("python", "python3", "pip", "bash", "ray", "spark-submit", "terraform", "aws", "databricks", "anyscale",
            "git", "%pip", "source", ".venv/bin/", ".venv-checkov/bin/", "sbi-", "cd ", "export ")
_FENCE = re.compile(r"^```")
_INLINE = re.compile(r"`([^`]+)`")
_TRAILING_COMMENT = re.compile(r"\s+#\s")  # "cmd   # what it does": bash ignores it; so does the verdict's key


@dataclass(frozen=True)
class DocCommand:
    doc: str  # where it is shown, e.g. "README.md"
    text: str  # the command as a user would copy it, continuation lines joined, a trailing comment dropped

    def __str__(self) -> str:
        return f"{self.doc}: {self.text}"


def is_command(text: str) -> bool:
    text = text.strip()
    return any(text == p.strip() or text.startswith(p if p.endswith((" ", "/", "-")) else p + " ") for p in PROGRAMS)


def doc_commands() -> list[DocCommand]:
    """Every command of every doc, in document order, each once per doc."""
    found: list[DocCommand] = []
    for doc in DOCS:
        seen: set[str] = set()
        for text in _commands_in((REPO / doc).read_text()):
            text = _TRAILING_COMMENT.split(text)[0].rstrip()
            if text not in seen:
                seen.add(text)
                found.append(DocCommand(doc, text))
    return found


def _commands_in(markdown: str) -> list[str]:
    commands, block, fenced, prose = [], [], False, []
    for line in markdown.splitlines():
        if _FENCE.match(line.strip()):
            if fenced:
                commands += _block_commands(block)
            fenced, block = not fenced, []
            continue
        if fenced:
            block.append(line)
        elif line.startswith("    ") and line.strip() and not prose:
            commands += _block_commands([line])
        elif line.strip():
            prose.append(line.strip())  # a paragraph: a code span may run over a line break
            continue
        if prose:
            commands += _inline_commands(" ".join(prose))
            prose = []
    commands += _inline_commands(" ".join(prose))
    return _join_indented_runs(commands)


def _inline_commands(paragraph: str) -> list[str]:
    return [span.strip() for span in _INLINE.findall(paragraph) if is_command(span)]


def _block_commands(lines: list[str]) -> list[str]:
    """The command lines of a code block, continuation lines (ending in a backslash) joined."""
    commands, current = [], ""
    for line in lines:
        text = line.strip()
        if current:
            current = current[:-1].rstrip() + " " + text
        elif is_command(text):
            current = text
        if current and not current.endswith("\\"):
            commands.append(current)
            current = ""
    return commands


def _join_indented_runs(commands: list[str]) -> list[str]:
    """Indented blocks arrive line by line: join a line ending in a backslash with the next."""
    joined: list[str] = []
    for text in commands:
        if joined and joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1].rstrip() + " " + text
        else:
            joined.append(text)
    return joined
