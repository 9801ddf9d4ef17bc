"""A Terraform provider's resource schemas, offline: the arguments and blocks each resource and data source takes.

`terraform validate` needs the provider binaries, which no offline machine can download. The
prebuilt CDK for Terraform bindings (PyPI's ``cdktf-cdktf-provider-databricks``) are generated
from the provider's own schema (``terraform providers schema -json``) and carry it in their jsii
assembly: one ``<Type>Config`` interface per resource, one property per argument or nested block,
each linking to its registry page as ``...#<argument name>``. This module reads that assembly as
data (no node, no jsii runtime) and checks a parsed block against it.
"""

from __future__ import annotations

import glob
import json
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from deploy_helpers import REPO

# Terraform's own meta-arguments, which no provider schema lists.
META_ARGUMENTS = {"count", "for_each", "depends_on", "lifecycle", "provider", "__comments__"}
_REGISTRY_LINK = re.compile(r"registry\.terraform\.io/providers/[\w-]+/[\w-]+/([\d.]+)/docs/(resources|data-sources)/(\w+)")
_ARGUMENT_LINK = re.compile(r"/docs/(?:resources|data-sources)/\w+#(\w+) ")


@dataclass
class Block:
    """A resource's (or a nested block's) arguments: name -> required, and its nested blocks by name."""

    arguments: dict[str, bool] = field(default_factory=dict)
    blocks: dict[str, "Block"] = field(default_factory=dict)

    def problems(self, body: dict, where: str) -> list[str]:
        """What in ``body`` (python-hcl2's parse of one block) the schema does not allow or misses."""
        found = []
        for name, value in body.items():
            if name in META_ARGUMENTS:
                continue
            if name == "dynamic":
                for dynamic in value if isinstance(value, list) else [value]:
                    for block_name, spec in dynamic.items():
                        found += self._nested(block_name, [spec["content"]], f"{where}.dynamic.{block_name}")
            elif name in self.blocks:
                found += self._nested(name, value if isinstance(value, list) else [value], f"{where}.{name}")
            elif name not in self.arguments:
                found.append(f"{where}: the provider has no argument {name!r}")
        given = set(body) | _dynamic_names(body)
        found += [f"{where}: required argument {name!r} missing" for name, required in self.arguments.items()
                  if required and name not in given]
        return found

    def _nested(self, name: str, bodies: list[dict], where: str) -> list[str]:
        if name not in self.blocks:
            return [f"{where}: the provider has no block {name!r}"]
        return [problem for body in bodies for problem in self.blocks[name].problems(body, where)]


def _dynamic_names(body: dict) -> set[str]:
    dynamic = body.get("dynamic", [])
    return {name for block in (dynamic if isinstance(dynamic, list) else [dynamic]) for name in block}


@dataclass
class ProviderSchema:
    version: str  # the provider release the bindings were generated from
    resources: dict[str, Block]
    data_sources: dict[str, Block]


def find_assembly(package: str) -> Path | None:
    """The jsii assembly of an installed prebuilt provider package, in the project's or checkov's virtualenv."""
    pattern = f"lib/python3*/site-packages/{package}/_jsii/*.jsii.tgz"
    found = sorted(glob.glob(str(REPO / ".venv" / pattern)) + glob.glob(str(REPO / ".venv-checkov" / pattern)))
    return Path(found[-1]) if found else None


def load(assembly: Path) -> ProviderSchema:
    with tarfile.open(assembly) as archive:
        types = json.load(archive.extractfile("package/.jsii"))["types"]
    resources, data_sources, version = {}, {}, None
    for spec in types.values():
        link = _REGISTRY_LINK.search(spec.get("docs", {}).get("summary", ""))
        if spec.get("kind") != "class" or link is None or not spec.get("initializer"):
            continue
        config = [p["type"]["fqn"] for p in spec["initializer"]["parameters"] if p["name"] == "config"]
        if not config:
            continue
        version, kind, name = link.groups()
        tf_type = spec["docs"]["summary"].split(" ")[-1].rstrip("}.")
        (resources if kind == "resources" else data_sources)[tf_type] = _block(types, config[0])
    return ProviderSchema(version or "", resources, data_sources)


def _block(types: dict, fqn: str) -> Block:
    block = Block()
    for prop in types[fqn].get("properties", []):
        docs = prop.get("docs", {})
        link = _ARGUMENT_LINK.search(docs.get("summary", "") + " " + docs.get("remarks", ""))
        if link is None:
            continue
        name, nested = link.group(1), _struct(prop["type"], fqn.split(".")[0])
        if nested is not None and types[nested].get("datatype"):
            block.blocks[name] = _block(types, nested)
        else:
            block.arguments[name] = not prop.get("optional", False)
    return block


def _struct(type_: object, assembly: str) -> str | None:
    """The provider's own data type named anywhere in a property's type (a block, a list of blocks)."""
    if isinstance(type_, dict):
        fqn = type_.get("fqn")
        if isinstance(fqn, str) and fqn.startswith(assembly + "."):
            return fqn
        for value in type_.values():
            found = _struct(value, assembly)
            if found:
                return found
    if isinstance(type_, list):
        for value in type_:
            found = _struct(value, assembly)
            if found:
                return found
    return None
