"""Read a job's output prefix and check it against the output contract, row by row.

Every engine's integration test ends here, so all of them are held to the same contract.
"""

from __future__ import annotations

import json

import pyarrow.fs as pafs
import pyarrow.parquet as pq

from job.execution import Execution
from job.output.rows import model_lineage, table_schema
from storage import resolve


def read_output(uri: str, endpoint: str | None = None) -> tuple[list[dict], dict]:
    """The output rows and the manifest of a finished job."""
    location = resolve(uri, endpoint)
    with location.filesystem.open_input_stream(location.join("_SUCCESS.json")) as f:
        manifest = json.loads(f.read())
    infos = location.filesystem.get_file_info(pafs.FileSelector(location.path, recursive=True))
    # As readers list a table (Spark, pyarrow.dataset, Athena): names starting with "_" or "." are not data.
    data = sorted(i.path for i in infos if i.type == pafs.FileType.File and i.path.endswith(".parquet")
                  and not any(part.startswith(("_", ".")) for part in i.path[len(location.path):].split("/")))
    assert sorted(p.rsplit("/", 1)[1] for p in data) == sorted(manifest["files"]), "files differ from the manifest"
    table = pq.read_table(data, filesystem=location.filesystem)
    expected = table_schema(Execution.from_dict(manifest["execution"]))  # the schema the run's plan declares
    assert table.schema.equals(expected, check_metadata=False), table.schema
    return table.to_pylist(), manifest


def assert_output_contract(rows: list[dict], manifest: dict, ids: list[str], bad: dict[str, str], topk: int = 5,
                           names: list[str] | None = None) -> None:
    """One row per input id, no duplicates; ``error`` set exactly for ``bad`` ids (containing the given words);
    ``names``: the class names each label must carry (None: the model has none, so names are null)."""
    got = [r["id"] for r in rows]
    assert len(got) == len(set(got)), "duplicate ids"
    assert sorted(got) == sorted(ids), "ids differ from the input"
    for row in rows:
        if row["id"] in bad:
            assert row["error"] and bad[row["id"]] in row["error"], row
            assert row["label"] is None and row["topk_labels"] is None and row["label_name"] is None, row
        else:
            assert row["error"] is None, row
            assert 0 <= row["label"] < len(names or range(1000)) and 0.0 < row["score"] <= 1.0, row
            assert row["topk_labels"][0] == row["label"] and len(row["topk_labels"]) == topk, row
            assert abs(row["topk_scores"][0] - row["score"]) < 1e-6, row
            expected = None if names is None else [names[label] for label in row["topk_labels"]]
            assert row["topk_label_names"] == expected and row["label_name"] == (expected or [None])[0], row
    assert_lineage(rows, manifest)
    counts = manifest["counts"]
    assert counts == {"rows_in": len(ids), "rows_out": len(ids), "predicted": len(ids) - len(bad), "errored": len(bad),
                      "withheld": 0}
    assert manifest["images_per_sec"] > 0 and manifest["seconds"] > 0
    assert {"python", "torch", "pyarrow"} <= set(manifest["versions"]) and manifest["hardware"]["cpu_count"] >= 1
    assert_timeline(manifest)


def assert_lineage(rows: list[dict], manifest: dict) -> None:
    """Every row names an input file of the table (an image object: its key, the row's id), a run, the manifest's
    model and a time."""
    files, model = set(manifest["table"]["files"]), manifest["execution"]["model"]
    objects = all(name.startswith("@") for name in files)
    for row in rows:
        assert (row["source_file"] == row["id"] if objects else row["source_file"] in files), row
        assert row["run_id"] and row["made_at"] is not None, row
        assert row["model"] == model_lineage(model["source"], manifest["config"]["weights"], model["weights_sha256"]), row


def assert_timeline(manifest: dict, steady_at_least_whole: bool = False) -> None:
    """Every run's timeline: start-up before the end; the steady rate, when there is one, a rate;
    ``steady_at_least_whole``: the pipeline once full beats the whole job's rate (start-up included)."""
    timeline = manifest["timeline"]
    assert set(timeline) == {"startup_seconds", "steady_images_per_sec", "device_busy_fraction", "wall_seconds", "events",
                             "images_decoded", "decode_seconds", "model_seconds"}, timeline
    assert 0 < timeline["startup_seconds"] < timeline["wall_seconds"], timeline
    assert manifest["seconds"] < timeline["wall_seconds"], (manifest["seconds"], timeline)
    busy = timeline["device_busy_fraction"]
    assert busy is None or 0 < busy <= 1, timeline
    if steady_at_least_whole:
        assert timeline["steady_images_per_sec"] is not None, timeline
        assert timeline["steady_images_per_sec"] >= manifest["images_per_sec"], (manifest["images_per_sec"], timeline)


def assert_progress_shown(err: str, engine: str, rows: int) -> None:
    """The job's progress display (job.progress, in log mode) reached every row, then the summary followed."""
    lines = [line for line in err.splitlines() if line.startswith(f"{engine}: ") and " images (" in line]
    assert lines and lines[-1].startswith(f"{engine}: {rows:,}/{rows:,} images (100%)"), err[-2000:]
