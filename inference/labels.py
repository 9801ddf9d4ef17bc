"""Class names: read from a labels file or torchvision's ImageNet list, checked, and hashed.

Use ``labels_from_file`` for ``--labels PATH|s3://`` (one name per line, or a JSON list),
``imagenet_names`` for ``--weights imagenet`` (torchvision's own list, read from its source
without importing torchvision, which would cost seconds), ``check_names`` for any list (a
checkpoint's too) and ``names_sha256`` for the hash the manifest and ``--resume`` compare.
Torch-free.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path

from inference.errors import WeightsError
from inference.files import read_bytes
from storage import redact

# Where torchvision keeps the ImageNet names its weights' meta["categories"] use.
TORCHVISION_IMAGENET_NAMES = ("models", "_meta.py", "_IMAGENET_CATEGORIES")


def labels_from_file(uri: str, s3_endpoint_url: str | None = None) -> tuple[str, ...]:
    """The names in ``uri``: a JSON list of strings, or one name per line (surrounding spaces dropped).

    A file whose text starts with ``[`` or ``{`` is read as JSON (so the first name cannot start with one).
    """
    shown = redact(uri)
    data = read_bytes(uri, s3_endpoint_url, "labels", "pass --labels a file path or s3:// URI")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise WeightsError(f"labels {shown}: not UTF-8 text ({e}); save it as UTF-8, one name per line") from e
    if text.lstrip()[:1] in ("[", "{"):  # JSON; a name list cannot start with a bracket
        return _json_names(text, shown)
    lines = text.splitlines()
    while lines and not lines[-1].strip():  # trailing blank lines: a final newline or two
        lines.pop()
    return tuple(line.strip() for line in lines)


def _json_names(text: str, shown: str) -> tuple[str, ...]:
    try:
        names = json.loads(text)
    except json.JSONDecodeError as e:
        raise WeightsError(f"labels {shown}: not valid JSON ({e}); write a JSON list of strings or one name per line") from e
    odd = [name for name in names if not isinstance(name, str)] if isinstance(names, list) else [names]
    if odd:
        found = f"{odd[0]!r} in the list" if isinstance(names, list) else f"a JSON {type(names).__name__}"
        raise WeightsError(f"labels {shown}: expected a JSON list of strings, found {found}; list the names in class index order")
    return tuple(names)


def check_names(names: Sequence[object], num_classes: int, source: str) -> tuple[str, ...]:
    """``names`` as a tuple, refused unless they are ``num_classes`` distinct non-empty strings."""
    if isinstance(names, (str, bytes)) or not isinstance(names, Sequence):
        raise WeightsError(f"class names from {source}: expected a list of strings, found {type(names).__name__}")
    for index, name in enumerate(names):
        if not isinstance(name, str) or not name.strip():
            raise WeightsError(f"class names from {source}: name {index} is {name!r}; every class needs a non-empty name")
    seen: dict[str, int] = {}
    for index, name in enumerate(names):
        if name in seen:
            raise WeightsError(f"class names from {source}: {name!r} is both name {seen[name]} and name {index}; "
                               "names must be distinct")
        seen[name] = index
    if len(names) != num_classes:
        raise WeightsError(f"class names from {source}: {len(names)} names for a model with {num_classes} classes; "
                           f"give one name per class, in the head's order")
    return tuple(names)


def names_sha256(names: Sequence[str]) -> str:
    """The names' identity: sha256 of their JSON list (UTF-8, no spaces), whatever file they came from."""
    return hashlib.sha256(json.dumps(list(names), ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


@functools.cache
def imagenet_names() -> tuple[str, ...]:
    """torchvision's 1,000 ImageNet class names (``torchvision.models._meta._IMAGENET_CATEGORIES``).

    Read from the installed torchvision's source as a literal: importing it would import every
    architecture. A torchvision that no longer keeps the list there gets a WeightsError naming
    the fix (``--labels``), never a guess.
    """
    *folders, file, variable = TORCHVISION_IMAGENET_NAMES
    spec = importlib.util.find_spec("torchvision")  # finds the package without running it
    if spec is None or not spec.submodule_search_locations:
        raise WeightsError("torchvision is not installed, so its ImageNet class names are not at hand; "
                           "pip install torchvision, or pass --labels FILE")
    path = Path(spec.submodule_search_locations[0], *folders, file)
    try:
        names = _literal_assigned(ast.parse(path.read_text(encoding="utf-8")), variable)
    except (OSError, SyntaxError, ValueError) as e:
        raise WeightsError(f"cannot read torchvision's ImageNet class names ({variable} in {path}: {e}); "
                           "pass --labels FILE with the 1000 names") from e
    return check_names(names, 1000, f"torchvision ({path})")


def _literal_assigned(module: ast.Module, variable: str) -> object:
    for node in module.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(target, ast.Name) and target.id == variable for target in targets):
            return ast.literal_eval(node.value)
    raise ValueError("not assigned there")
