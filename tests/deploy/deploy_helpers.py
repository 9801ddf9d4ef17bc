"""Paths, parsers and command-line helpers shared by the deployment checks (tests/deploy).

Kept out of conftest.py under a unique module name so test modules can import them
whatever other conftest.py files the test session loads.
"""

import os
import re
import shlex
import shutil
from pathlib import Path

import hcl2
import pytest
import yaml
from hcl2.utils import SerializationOptions

REPO = Path(__file__).resolve().parents[2]
TERRAFORM = REPO / "terraform"
DEPLOY = REPO / "deploy"
DOCS = REPO / "docs" / "DEPLOY.md"

# Bare strings, nested blocks as plain dicts, comments kept (they carry the "why" of a "*").
_HCL_OPTIONS = SerializationOptions(strip_string_quotes=True, explicit_blocks=False)

# checkov pins packaging<24 and ray 2.60 needs >=24.2, so checkov lives in its own venv.
CHECKOV_INSTALL = (
    "python3 -m venv .venv-checkov && "
    ".venv-checkov/bin/pip install -r tests/deploy/requirements-checkov.txt"
)


def load_yaml(relative: str):
    return yaml.safe_load((REPO / relative).read_text())


def _unwrap_single_blocks(value):
    """python-hcl2 gives every nested block as a list; a block written once becomes a dict."""
    if isinstance(value, dict):  # Comments stay a list of {"value": line}.
        return {k: v if k == "__comments__" else _unwrap_single_blocks(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [_unwrap_single_blocks(v) for v in value]
        return items[0] if len(items) == 1 and isinstance(items[0], dict) else items
    return value


def parse_hcl_dir(directory: Path) -> dict:
    """Merge the top-level blocks of every *.tf in one directory (not recursive).

    Returns {"resource": {type: {name: body}}, "data": ..., "variable": {name: body},
    "output": {name: body}, "module": {name: body}, "locals": {name: value}, "terraform": [...]}.
    """
    merged: dict = {"resource": {}, "data": {}, "variable": {}, "output": {},
                    "module": {}, "locals": {}, "terraform": [], "provider": {}}
    for path in sorted(directory.glob("*.tf")):
        raw = hcl2.load(path.open(), serialization_options=_HCL_OPTIONS)
        parsed = {kind: blocks if isinstance(blocks, list) else [blocks]
                  for kind, blocks in _unwrap_single_blocks(raw).items()}
        for kind in ("resource", "data"):
            for block in parsed.get(kind, []):
                for type_, named in block.items():
                    merged[kind].setdefault(type_, {}).update(named)
        for kind in ("variable", "output", "module", "provider"):
            for block in parsed.get(kind, []):
                merged[kind].update(block)
        for block in parsed.get("locals", []):
            merged["locals"].update({k: v for k, v in block.items() if k != "__comments__"})
        merged["terraform"] += parsed.get("terraform", [])
    return merged


def tf_default(tf: dict, name: str):
    return tf["variable"][name]["default"]


def checkov_executable() -> str:
    for candidate in (os.environ.get("CHECKOV"), shutil.which("checkov"),
                      REPO / ".venv-checkov" / "bin" / "checkov"):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    pytest.fail(f"checkov is not installed. Install it apart from ray: {CHECKOV_INSTALL} "
                "(or point CHECKOV at a checkov executable).")


def runner_args(tokens: list[str]) -> dict[str, str | None]:
    """'--flag value' / '--switch' tokens of a runner command line -> {flag: value or None}."""
    args: dict[str, str | None] = {}
    for i, token in enumerate(tokens):
        if token.startswith("--"):
            following = tokens[i + 1] if i + 1 < len(tokens) else None
            args[token] = None if following is None or following.startswith("--") else following
    return args


def module_command(tokens: list[str], module: str) -> list[str]:
    """The tokens after `python -m <module>`; fails if the command does not run that module."""
    assert tokens[:3] == ["python", "-m", module], f"expected python -m {module}, got {tokens[:3]}"
    return tokens[3:]


def ray_submit_tokens() -> list[str]:
    """The runner command line that deploy/ray/submit.sh passes to `ray job submit ... --`."""
    script = (DEPLOY / "ray" / "submit.sh").read_text().replace("\\\n", " ")
    line = next(l for l in script.splitlines() if l.lstrip().startswith("ray job submit"))
    return shlex.split(line.split(" -- ", 1)[1])


GPU_INSTANCE = re.compile(r"^(g4dn|g5|g6|g6e|p3|p4d|p4de|p5|p5e)\.")
CPU_ONLY_INSTANCE = re.compile(r"^(m|c|r)\d+[a-z]*\.")


def script_command(relative: str, module: str) -> list[str]:
    """The tokens of the `python -m <module> ...` command in a shell script (continuations joined)."""
    script = (REPO / relative).read_text().replace("\\\n", " ")
    line = next(l for l in script.splitlines() if l.lstrip().startswith(f"python -m {module}"))
    return shlex.split(line)


def expand(token: str, env: dict[str, str], date: str) -> str:
    """A command-line token as the shell expands it with ``env`` and `date -u +%F` = ``date``."""
    token = token.replace("$(date -u +%F)", date)
    return re.sub(r"\$\{?(\w+)\}?", lambda m: env[m.group(1)], token)
