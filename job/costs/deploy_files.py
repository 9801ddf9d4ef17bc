"""The deploy files with a sized cluster's counts written in: copies into a folder the user names, never the originals.

``write_deploy`` copies the engine's files from a ``deploy/`` folder (the repository's by default) and sets, line by
line, the values the counts decide, keeping every comment and every other line as the original has it:
- ray: ``anyscale/compute_config.yaml`` (the GPU group's and the CPU-only group's instance type, min and max nodes) and
  ``anyscale/job.yaml`` + ``schedule.yaml`` (``--num-gpu-actors``, which equals the GPU group's GPUs);
- spark: ``databricks/databricks.yml`` (the job cluster's ``node_type_id``, ``driver_node_type_id``, ``num_workers``);
- sagemaker: ``sagemaker/nightly.sh`` (``--instance-type ml.<type>``, ``--instance-count``).
A line to set that is missing, or found twice, means the file's layout changed: refused in one line rather than
written half-set. The copies keep the originals' relative paths: they take the originals' places in a clone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from job.costs.layout import CPU_DECODERS, DRIVER, GPU_WORKERS, Layout, gpus_used
from job.errors import JobError

REPOSITORY_DEPLOY = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "deploy")
FILES = {"ray": ("anyscale/compute_config.yaml", "anyscale/job.yaml", "anyscale/schedule.yaml"),
         "spark": ("databricks/databricks.yml",), "sagemaker": ("sagemaker/nightly.sh",)}
GPU_GROUP, CPU_GROUP = "gpu-inference", "cpu-preprocess"  # compute_config.yaml's worker groups, by name
Edit = Callable[[str, str], str]  # (the file's text, its path for errors) -> the text with the values set


def write_deploy(layout: Layout, directory: str, source: str = REPOSITORY_DEPLOY, why: str = "") -> list[str]:
    """Write ``layout``'s engine's deploy files, set to its counts, under ``directory``; returns the paths written.
    ``why``: a line for the comment each set value carries (e.g. the images and the deadline)."""
    if layout.engine not in FILES:
        raise JobError(f"--write-deploy: the {layout.engine} engine has no deploy files (ray, spark and sagemaker do)")
    if not os.path.isdir(source):
        raise JobError(f"--write-deploy: no deploy folder at {source} (a pip-installed package ships none): pass "
                       "--deploy-from the deploy/ folder of a clone of the repository")
    note = f"set by runners.capacity{': ' + why if why else ''}"
    written = []
    for relative in FILES[layout.engine]:
        original, copy = os.path.join(source, relative), os.path.join(directory, relative)
        if os.path.exists(copy) and os.path.samefile(original, copy):
            raise JobError(f"--write-deploy {directory}: would overwrite {original} itself; name another folder")
        with open(original) as f:
            text = f.read()
        os.makedirs(os.path.dirname(copy), exist_ok=True)
        with open(copy, "w") as f:
            f.write(_EDITS[relative](layout, note)(text, original))
        written.append(copy)
    return written


def _compute_config(layout: Layout, note: str) -> Edit:
    gpu, cpu = _nodes(layout, GPU_WORKERS), _nodes(layout, CPU_DECODERS)

    def edit(text: str, path: str) -> str:
        text = _in_group(text, path, GPU_GROUP, {"instance_type": f"{gpu.instance.name}  # {note}",
                                                  "min_nodes": str(gpu.count), "max_nodes": str(gpu.count)})
        if cpu is None:  # the GPU nodes' own vCPUs decode enough: no CPU-only group (Anyscale's groups hold 1 node or more)
            return _in_group(text, path, CPU_GROUP, None)
        return _in_group(text, path, CPU_GROUP, {"instance_type": f"{cpu.instance.name}  # {note}",
                                                 "min_nodes": str(cpu.count), "max_nodes": str(cpu.count)})
    return edit


def _gpu_actors(layout: Layout, note: str) -> Edit:
    gpu = _nodes(layout, GPU_WORKERS)
    return lambda text, path: _set(text, path, r"(--num-gpu-actors )\d+", rf"\g<1>{gpu.count * gpus_used('ray', gpu.instance)}")


def _databricks(layout: Layout, note: str) -> Edit:
    gpu = _nodes(layout, GPU_WORKERS)

    def edit(text: str, path: str) -> str:
        for key, value in (("node_type_id", gpu.instance.name), ("driver_node_type_id", _nodes(layout, DRIVER).instance.name),
                           ("num_workers", str(gpu.count))):
            text = _set(text, path, rf"^(\s*{key}: )\S+.*$", rf"\g<1>{value}  # {note}")
        return text
    return edit


def _sagemaker(layout: Layout, note: str) -> Edit:
    gpu = _nodes(layout, GPU_WORKERS)

    def edit(text: str, path: str) -> str:
        text = _set(text, path, r"(--instance-type )ml\.\S+", rf"\g<1>ml.{gpu.instance.name}")
        return _set(text, path, r"(--instance-count )\d+", rf"\g<1>{gpu.count}")
    return edit


_EDITS: dict[str, Callable[[Layout, str], Edit]] = {
    "anyscale/compute_config.yaml": _compute_config, "anyscale/job.yaml": _gpu_actors, "anyscale/schedule.yaml": _gpu_actors,
    "databricks/databricks.yml": _databricks, "sagemaker/nightly.sh": _sagemaker,
}


def _nodes(layout: Layout, role: str):
    return next((n for n in layout.nodes if n.role == role and n.count), None)


def _set(text: str, path: str, pattern: str, replacement: str) -> str:
    """``text`` with the one match of ``pattern`` replaced; none or several: the file's layout changed."""
    changed, count = re.subn(pattern, replacement, text, flags=re.MULTILINE)
    if count != 1:
        raise JobError(f"{path}: expected one line matching {pattern!r} to set, found {count}: the file's layout "
                       "changed; set the counts by hand, or pass --deploy-from a folder of the shipped layout")
    return changed


def _in_group(text: str, path: str, group: str, values: dict[str, str] | None) -> str:
    """``text`` with ``values`` set inside the worker group named ``group`` (from its ``- name:`` line to the next
    group or top-level key); None: the group left out."""
    start = re.search(rf"^[ \t]*- name: {re.escape(group)}[ \t]*\n", text, flags=re.MULTILINE)
    if start is None:
        raise JobError(f"{path}: no worker group named {group}: the file's layout changed; set the counts by hand")
    after = re.search(r"^[ \t]*- name: |^\S", text[start.end():], flags=re.MULTILINE)
    end = start.end() + (after.start() if after else len(text) - start.end())
    if values is None:
        return text[:start.start()] + text[end:]
    block = text[start.end():end]
    for key, value in values.items():
        block = _set(block, f"{path} ({group})", rf"^(\s*{key}: )\S+.*$", rf"\g<1>{value}")
    return text[:start.end()] + block + text[end:]
