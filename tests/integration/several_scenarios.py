"""Several models in one run (--models): scenarios the local, Ray and Spark tests run the same way.

Three models over one input of tiny photos and two broken rows: a torchvision classifier with --labels into a plain
folder, a Hugging Face CLIP tower's embeddings into a Delta table, a timm EfficientNet (a bicubic recipe) with its
embeddings into an Iceberg table. Each model's table holds what a run of that model alone writes (every id, the same
top-1 and error rows, embeddings at cosine >= 0.9999), every image decoded once for them all; a night with files added
and changed keeps each table on its own plan (one in a rollout, the others incremental); a run killed part-way is
finished by --resume for every table.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tests.common.contract import read_output
from tests.common.model_sources import hf_folder, timm_checkpoint
from tests.integration.incremental_scenarios import write_night
from tests.integration.table_scenarios import read_delta, read_iceberg
from tests.unit.test_layers import ROOT

Main = Callable[[Sequence[str] | None], dict]
MIN_COSINE = 0.9999
BROKEN = {"broken-truncated": b"\xff\xd8\xff\xe0" + b"\x00" * 40, "broken-not-an-image": b"not an image at all"}


@dataclass(frozen=True)
class Models:
    """The three models' options, as a --models entry and as a single-model command line."""

    root: Path
    entries: dict[str, dict]  # name -> its [[models]] entry, output and table format included

    def toml(self, names: Sequence[str], **overrides: dict) -> Path:
        path = self.root / f"models-{'-'.join(names)}.toml"
        lines = []
        for name in names:
            lines.append("[[models]]")
            for key, value in {**self.entries[name], **overrides.get(name, {})}.items():
                lines.append(f"{key} = {_toml(value)}")
        path.write_text("\n".join(lines) + "\n")
        return path

    def argv(self, name: str, output: str) -> list[str]:
        """The entry's options on a single model's command line, into ``output``."""
        entry = {**self.entries[name], "output": output}
        return [part for key, value in entry.items() for part in (f"--{key.replace('_', '-')}", str(value))]


def _toml(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def make_models(root: Path) -> Models:
    """Three models on disk (tiny: the test is the run, not the models) and a labels file for the classifier."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "labels.txt").write_text("\n".join(f"class {i}" for i in range(1000)) + "\n")
    timm_checkpoint(root / "efficientnet.pt", "test_efficientnet")
    clip = hf_folder(root / "clip", "clip")
    return Models(root, {
        "classifier": {"model": "resnet18", "weights": "random", "labels": str(root / "labels.txt"),
                       "output": str(root / "out-classifier"), "table_format": "parquet"},
        "embedder": {"model": f"hf:{clip}", "embeddings": "only", "output": str(root / "out-embedder"),
                     "table_format": "delta"},
        "timm": {"model": "timm:test_efficientnet", "weights": str(root / "efficientnet.pt"), "embeddings": "with",
                 "output": str(root / "out-timm"), "table_format": "iceberg"},
    })


def write_input(uri: str, first: int, files: int, broken: bool = False) -> list[str]:
    """``files`` files of tiny photos (and, ``broken``, a file of two rows that are no image); their ids."""
    ids = write_night(uri, None, first, files)
    if broken:
        table = pa.table({"id": list(BROKEN), "image": pa.array(list(BROKEN.values()), pa.binary())})
        pq.write_table(table, f"{uri}/broken.parquet")
        ids += list(BROKEN)
    return ids


def rows_of(output: str, table_format: str) -> dict[str, dict]:
    if table_format == "delta":
        rows = read_delta(output, None).to_pylist()
    elif table_format == "iceberg":
        rows = read_iceberg(output, None).to_pylist()
    else:
        rows = read_output(output)[0]
    by_id = {row["id"]: row for row in rows}
    assert len(by_id) == len(rows), "an id twice"
    return by_id


def same_rows(mine: dict[str, dict], theirs: dict[str, dict]) -> None:
    """As a single-model run wrote them: the ids, the error rows, the top-1, the embeddings (cosine)."""
    assert sorted(mine) == sorted(theirs)
    for key, row in theirs.items():
        got = mine[key]
        assert got["error"] == row["error"], key
        if "label" in row:
            assert got["label"] == row["label"] and got["label_name"] == row["label_name"], key
        if row.get("embedding") is not None:
            a, b = np.asarray(got["embedding"], np.float64), np.asarray(row["embedding"], np.float64)
            assert float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)) >= MIN_COSINE, key


def each_table_is_its_models_own(main: Main, models: Models, source: str, names: Sequence[str], *engine: str) -> dict:
    """One run of ``names``: each table as a run of that model alone writes it, and each image decoded once."""
    ran = main(["--input", source, "--models", str(models.toml(names)), *engine])
    manifests = {name: m for name, m in zip(names, ran["models"])}
    images = manifests[names[0]]["counts"]["rows_in"]
    for name in names:
        entry = models.entries[name]
        alone = str(models.root / f"alone-{name}-{len(names)}")
        main(["--input", source, *models.argv(name, alone), *engine])
        same_rows(rows_of(entry["output"], entry["table_format"]), rows_of(alone, entry["table_format"]))
        timeline = manifests[name]["timeline"]
        assert timeline["images_decoded"] == images - len(BROKEN) and timeline["model_seconds"] > 0, timeline
    return manifests


def a_night_of_several_tables_on_their_own_plans(main: Main, models: Models, source: str, *engine: str) -> None:
    """Night 1: two models; night 2: a file added and one changed; the classifier's entry now names another model
    with rollout_files = 1 (its table in a rollout), the embedder's table an incremental night."""
    names = ("classifier", "embedder")
    night = ["--input", source, "--incremental", *engine]
    main([*night, "--models", str(models.toml(names))])
    every = set(write_input(source, 10, 1)) | set(write_input(source, 1, 1, False))  # a new file, part-00001 changed
    rolled = {"classifier": {"model": "resnet34", "rollout_files": 1}}
    ran = main([*night, "--models", str(models.toml(names, **rolled))])
    classifier, embedder = ran["models"]
    assert classifier["rollout"]["rescored"] == 1 and classifier["rollout"]["left"]["files"] >= 1
    assert sorted(embedder["table"]["delta"]["added"]) == ["part-00010.parquet"]
    assert embedder["table"]["delta"]["replaced"] == ["part-00001.parquet"]
    for name in names:
        entry = models.entries[name]
        held = rows_of(entry["output"], entry["table_format"])
        assert every <= set(held), (name, sorted(every - set(held)))


def a_run_killed_part_way_is_finished_by_resume(main: Main, module: str, models: Models, source: str,
                                                *engine: str) -> None:
    """A run of two models killed with SIGKILL after its first part; --resume finishes every table."""
    names = ("classifier", "embedder")
    argv = ["--input", source, "--models", str(models.toml(names)), *engine]
    killed = subprocess.run([sys.executable, "-m", module, *argv], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "SBI_FAILPOINT": "part-written:kill"}, timeout=600)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    ran = main([*argv, "--resume"])
    ids = set(rows_of(models.entries["classifier"]["output"], "parquet"))
    for name, manifest in zip(names, ran["models"]):
        entry = models.entries[name]
        assert set(rows_of(entry["output"], entry["table_format"])) == ids and manifest["counts"]["rows_out"] == len(ids)
