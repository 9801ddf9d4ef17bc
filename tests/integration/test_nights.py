"""A table's nights read back from _history/, on manifests the local engine wrote: what each night scored and why, the
table's rate, runners.history's lines, chart and MLflow run, and runners.capacity answering from the table's nights.

Two real nights of a tiny input: the first scores 4 files with ResNet50; the second adds a file and rolls out ResNet18,
re-scoring 2 of the old files. Everything below reads what those runs wrote.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from PIL import Image

from job.costs.history import read_nights
from job.costs.rates import table_rate
from job.errors import JobError
from job.night.record import HISTORY_DIR
from job.night.stopped_runs import record_stopped_runs
from runners import capacity, history, local_job
from storage import resolve
from tests.common.extras import library_or_skip
from tests.integration.checks_scenarios import job_args
from tests.integration.incremental_scenarios import ROWS_PER_FILE, write_night

SMALL = ("--resize", "40", "--crop", "32", "--workers", "0")
A, B = ("--arch", "resnet50", *SMALL), ("--arch", "resnet18", *SMALL)


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> tuple[str, list[dict]]:
    """(the table's folder, the two nights' manifests)."""
    root = tmp_path_factory.mktemp("nights")
    source, out = str(root / "in"), str(root / "out")
    args = job_args(source, out, None, "--incremental")
    write_night(source, None, 0, 4)
    first = local_job.main([*args, *A])
    write_night(source, None, 4, 1)
    second = local_job.main([*args, *B, "--rollout-files", "2"])
    return out, [first, second]


def copy_of(table, tmp_path) -> str:
    shutil.copytree(table[0], tmp_path / "out")
    return str(tmp_path / "out")


def test_each_night_says_what_it_scored_and_why(table):
    out, (first, second) = table
    nights = read_nights(resolve(out))
    assert [n.run_id for n in nights] == [first["run_id"], second["run_id"]]
    assert nights[0].by_reason == {"new": 4 * ROWS_PER_FILE} and nights[0].scored == first["input_files"]["rows_run"]
    assert nights[1].by_reason == {"new": ROWS_PER_FILE, "rollout": 2 * ROWS_PER_FILE}
    assert sum(nights[1].by_reason.values()) == second["input_files"]["rows_run"]
    assert nights[0].model != nights[1].model and nights[1].model.startswith("resnet18")
    assert nights[1].rollout == second["rollout"] and nights[1].rollout["left"]["files"] == 2
    assert all(n.engine == "local" and n.at is not None and n.gpus == 0 for n in nights)


def test_the_tables_rate_is_its_nights_and_names_them(table):
    out, (first, second) = table
    nights = read_nights(resolve(out))
    rate = table_rate(resolve(out), engine="local")
    assert rate.kind == "history" and rate.images_per_sec == pytest.approx(np.median([n.rate for n in nights]))
    assert rate.source.startswith("this table's last 2 nights (local on ") and "too few batches" in rate.source
    only_b = table_rate(resolve(out), model=nights[1].model)
    assert only_b.images_per_sec == second["images_per_sec"] and "last night" in only_b.source
    assert table_rate(resolve(out), engine="ray") is None


def test_a_stopped_runs_record_reads_as_a_night_without_figures(table, tmp_path):
    out = copy_of(table, tmp_path)
    adopting = read_nights(resolve(out))[1]
    options = adopting.options
    record_stopped_runs(resolve(out), {"part-gone.parquet": {"run_id": "20000101T000000-0badc0de", "options": options}},
                        adopting.run_id)
    nights = read_nights(resolve(out))
    stopped = nights[0]
    assert (stopped.finished, stopped.adopted_by, stopped.model, stopped.rate) == (False, adopting.run_id, adopting.model, None)
    assert [n.by_reason for n in nights[1:]] == [n.by_reason for n in read_nights(resolve(table[0]))]


def test_a_record_that_is_not_json_is_refused_naming_it(table, tmp_path):
    out = copy_of(table, tmp_path)
    (tmp_path / "out" / HISTORY_DIR / "20991231T000000-notjson.json").write_text("{ half a manifest")
    with pytest.raises(JobError, match=r"20991231T000000-notjson.json: not a JSON history record"):
        read_nights(resolve(out))


def test_history_prints_a_line_a_night_with_dollars_and_the_rollout(table, capsys):
    out, (first, second) = table
    records = history.main([out, "--price-per-hour", "3.6"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    for line, record in zip(lines, records):
        assert record["dollars"] > 0 and line.split("  ")[5] == ("<$0.01" if record["dollars"] < 0.01 else f"${record['dollars']:,.2f}")
    assert f"scored {4 * ROWS_PER_FILE} (new {4 * ROWS_PER_FILE})" in lines[0] and " UTC  local  " in lines[0]
    assert f"(new {ROWS_PER_FILE}, rollout {2 * ROWS_PER_FILE})" in lines[1] and "rollout: 3 files of 5 (9 of 15 images) on resnet18" in lines[1]
    assert records[1]["dollars"] == pytest.approx(3.6 * second["timeline"]["wall_seconds"] / 3600, abs=1e-4)
    assert "start-up" in lines[1] and "images/s whole run" in lines[1]


def test_history_draws_a_chart_a_person_can_read(table, tmp_path):
    pytest.importorskip("matplotlib", reason="the chart needs matplotlib: pip install -e '.[compare]'")
    path = tmp_path / "nights.png"
    history.main([table[0], "--plot", str(path)])
    with Image.open(path) as image:
        assert image.format == "PNG" and image.width >= 900 and image.height >= 900
        pixels = np.asarray(image.convert("L"))
    assert pixels.std() > 20 and (pixels < 128).mean() > 0.02, "a chart, not a blank page"


def test_a_night_is_logged_to_mlflow_once(table, tmp_path):
    library_or_skip("mlflow", "mlflow")
    import mlflow

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out, (first, second) = table
    argv = [out, "--mlflow-experiment", "nightly", "--mlflow-tracking-uri", uri]
    history.main(argv)
    history.main(argv)  # the same night again: found, not logged twice
    runs = mlflow.MlflowClient(tracking_uri=uri).search_runs([mlflow.MlflowClient(tracking_uri=uri)
                                                              .get_experiment_by_name("nightly").experiment_id])
    assert len(runs) == 1
    run = runs[0]
    assert run.data.tags["sbi.run_id"] == second["run_id"] and run.data.params["engine"] == "local"
    assert run.data.params["arch"] == "resnet18" and run.data.params["recipe.crop"] == "32"
    assert run.data.metrics["images_scored"] == second["input_files"]["rows_run"]
    assert run.data.metrics["scored_rollout"] == 2 * ROWS_PER_FILE and run.data.metrics["rollout_files_left"] == 2
    artifact = mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="manifest.json",
                                                   tracking_uri=uri, dst_path=str(tmp_path / "artifacts"))
    with open(artifact) as f:
        assert json.load(f)["run_id"] == second["run_id"]


def test_capacity_answers_from_the_tables_own_nights(table, capsys):
    out, (first, second) = table
    found = capacity.main(["--images", "1000", "--engine", "local", "--output", out, "--weights", "random", *B[:-2]])
    assert found["rates"]["whole_per_unit"]["kind"] == "history"
    assert found["rates"]["whole_per_unit"]["images_per_sec"] == second["images_per_sec"]
    assert found["seconds"] == pytest.approx(second["timeline"]["startup_seconds"] + 1000 / second["images_per_sec"], abs=0.1)
    assert "this table's last night (local on" in capsys.readouterr().out
