"""Which of our modules a program needs: the closure of its imports over our own packages.

Use ``modules_imported_by(path)`` to ship exactly what a program runs (the SageMaker archive
ships what its handler imports): no hand-kept list of modules to fall behind the code.
Read from the source with ``ast``: every ``import`` and ``from ... import`` in a file, inside
functions too (our modules import torch-bound code lazily, in functions), but not those under
``if TYPE_CHECKING:`` (never run), resolved to the files
of our top-level packages; each package's ``__init__.py`` on the way comes too, as Python
runs it. A module loaded by a name in a string (``importlib.import_module(name)``) is not
seen: import modules by statement.
"""

from __future__ import annotations

import ast
import os

OUR_PACKAGES = ("job", "preprocess", "inference", "storage", "runners")  # the repository's importable packages
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # where they live


def modules_imported_by(path: str) -> list[tuple[str, str]]:
    """(source file, its path inside the package tree, e.g. ``job/stages.py``) for every module of ours ``path`` needs."""
    found: dict[str, str] = {}
    todo = [path]
    while todo:
        for module in _imported_modules(todo.pop()):
            for name in _with_parents(module):
                relative = _file_of(name)
                if relative is not None and relative not in found:
                    found[relative] = os.path.join(ROOT, relative)
                    todo.append(found[relative])
    return sorted((source, relative) for relative, source in found.items())


def _imported_modules(path: str) -> set[str]:
    """Dotted names a file imports; ``from a import b`` names both ``a`` and ``a.b`` (b may be a submodule).

    Imports under ``if TYPE_CHECKING:`` are for type checkers only: never run, not needed.
    """
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    names: set[str] = set()
    for node in _run_nodes(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name.split(".")[0] in OUR_PACKAGES}


def _run_nodes(node: ast.AST) -> list[ast.AST]:
    """Every node under ``node`` but those in ``if TYPE_CHECKING:`` bodies."""
    found = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            found += [n for branch in child.orelse for n in (branch, *_run_nodes(branch))]
            continue
        found += [child, *_run_nodes(child)]
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _with_parents(module: str) -> list[str]:
    """``a.b.c`` -> ``a``, ``a.b``, ``a.b.c``: importing a module runs its packages' ``__init__`` first."""
    parts = module.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def _file_of(module: str) -> str | None:
    """The module's file relative to ROOT (``a/b.py`` or ``a/b/__init__.py``); None for a name that is no module."""
    base = os.path.join(*module.split("."))
    for relative in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(os.path.join(ROOT, relative)):
            return relative
    return None
