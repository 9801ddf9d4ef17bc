"""No import circle anywhere in the project's packages: every arrow between two modules runs one way.

Read from the source: every import statement, inside functions and under ``if TYPE_CHECKING:``
too (a type-only import back is still a module that knows its caller), resolved to our files.
``from a import b`` counts as importing the module ``a.b`` when that is a module, else ``a``.
"""

from __future__ import annotations

import ast
import pathlib

from tests.unit.test_layers import ROOT

PACKAGES = ("storage", "preprocess", "inference", "job", "runners")
JOB_TOP_MODULES = 15  # job/'s top level: the driver's own concepts; the rest lives in rooms (input/, output/...)


def module_of(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, pathlib.Path]:
    return {module_of(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


def arrows(known: dict[str, pathlib.Path]) -> dict[str, set[str]]:
    """module -> the modules of ours it imports (itself and its own packages' ``__init__`` left out)."""
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets |= {f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in known else node.module
                            for alias in node.names}
        graph[module] = {t for t in targets if t in known and t != module and not module.startswith(t + ".")}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_one_that_imports_it_back():
    assert circles(arrows(modules())) == []


def test_the_check_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_job_keeps_few_modules_at_its_top():
    top = sorted(p.name for p in (ROOT / "job").glob("*.py"))
    assert len(top) <= JOB_TOP_MODULES, top
