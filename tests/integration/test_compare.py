"""python -m runners.compare end to end: all four engines once on a tiny set, then its report and parity.

The engines run once for the session (each in its own process, as compare runs them:
``tests.common.every_engine``, which test_your_model reads too); the tests read what that run
wrote. The parity failure is real: an engine's output altered on disk, read back through the
manifest like any other output.
"""

from __future__ import annotations

import dataclasses
import json
import shutil

import matplotlib.image
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from job.cli import run_main
from job.sample.synthetic import synthetic_rows, write_dataset
from runners import compare
from runners.compare import report as compare_report
from runners.compare.parity import check_parity, read_outcomes
from storage import resolve
from tests.common.every_engine import BATCH, ENGINES, NAMES, PRICE

ENGINES = list(ENGINES)
RUN_KEYS = {"engine", "images", "errors", "seconds", "images_per_sec", "model_only_images_per_sec", "config", "hardware", "versions"}


@pytest.fixture(scope="module")
def compared(every_engine):
    """compare's run: 11 JPEGs and a truncated one in 3 files, batch 8, a 10-class checkpoint, embeddings beside predictions."""
    return every_engine.comparison, every_engine.report, every_engine.printed


def test_one_row_per_engine_taken_from_its_manifest(compared):
    comparison, report, _ = compared
    results = json.loads((report / "results.json").read_text())
    assert [r["engine"] for r in results["runs"]] == ENGINES
    model_only = results["model_only"]["images_per_sec"]
    assert model_only > 0 and results["model_only"]["batch_size"] == 8 and results["model_only"]["precision"] == "fp32"
    for row in results["runs"]:
        manifest = json.loads((report / "outputs" / row["engine"] / "_SUCCESS.json").read_text())
        assert RUN_KEYS <= set(row) and row["failed"] is None
        assert (row["images"], row["errors"]) == (12, 1) == (manifest["counts"]["rows_out"], manifest["counts"]["errored"])
        assert (row["seconds"], row["images_per_sec"]) == (manifest["seconds"], manifest["images_per_sec"])
        assert row["model_only_images_per_sec"] == model_only
        assert row["model_only_ratio"] == round(row["images_per_sec"] / model_only, 3)
        assert row["dollars_per_million_images"] == pytest.approx(PRICE / (row["images_per_sec"] * 3600) * 1e6, abs=0.01)
        same = {k: v for k, v in row["config"].items() if k != "output"}
        assert same == {k: v for k, v in results["runs"][0]["config"].items() if k != "output"}
        assert (same["batch_size"], same["precision"], same["weights"]) == (BATCH, "fp32", str(report.parent / "ddp.pt"))
        assert row["hardware"]["cpu_count"] >= 1 and "torch" in row["versions"]
        # Every engine's driver decided the same plan from the same options.
        assert row["execution"] == results["runs"][0]["execution"]
        assert {k: row["execution"][k] for k in ("device", "decode", "batch_size", "precision", "compile")} == \
            {"device": "cpu", "decode": "cpu", "batch_size": 8, "precision": "fp32", "compile": False}


def test_engine_args_reach_their_engine_only(compared):
    _, report, printed = compared
    runs = {r["engine"]: r for r in json.loads((report / "results.json").read_text())["runs"]}
    assert runs["ray"]["engine_args"] == ["--num-cpu-actors", "1"] and runs["local"]["engine_args"] == ["--workers", "1"]
    assert runs["spark"]["engine_args"] == runs["sagemaker"]["engine_args"] == []
    assert runs["ray"]["settings"]["scaling"]["preprocess_actors"] == 1
    assert runs["local"]["settings"]["local"]["workers"] == 1
    assert "Engine options (--engine-args): ray `--num-cpu-actors 1`; local `--workers 1`." in printed


def test_engines_agree_and_the_run_passes(compared):
    comparison, report, _ = compared
    parity = json.loads((report / "results.json").read_text())["parity"]
    cosines = parity.pop("min_embedding_cosine"), parity.pop("min_centred_cosine")
    assert parity == {"ok": True, "mismatches": 0, "rows": 12, "engines": ENGINES, "examples": []}
    assert all(0.999 <= cosine <= 1.0 + 1e-6 for cosine in cosines) and comparison.exit_code == 0, cosines  # the same embeddings


def test_report_files_chart_and_printed_table(compared):
    _, report, printed = compared
    assert (report / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    height, width, _ = matplotlib.image.imread(str(report / "chart.png")).shape
    assert width > 400 and height > 200
    markdown = (report / "results.md").read_text()
    for engine in ENGINES:
        assert sum(line.startswith(f"| {engine} | 12 | 1 |") for line in markdown.splitlines()) == 1, engine
    assert "Parity: OK. 4 engines agree on all 12 ids" in markdown
    assert markdown in printed


def test_preprocess_stage_times_the_inputs_decodable_images(compared):
    _, report, _ = compared
    rows = json.loads((report / "results.json").read_text())["preprocess"]
    assert [r["method"] for r in rows] == ["ours", "torchvision_resize_crop", "torchvision_preset"]
    for row in rows:
        assert row["images"] == 11 and row["images_per_sec_per_core"] > 0  # the truncated JPEG is left out
        assert row["ours_speedup"] == pytest.approx(rows[0]["images_per_sec_per_core"] / row["images_per_sec_per_core"], rel=0.02)


def _alter(output, relabel: str, drop: str, error: str, swap: tuple[str, str]) -> None:
    """Rewrite an output as one Parquet file: one label changed, one row removed, one good row turned into an
    error, two rows' embeddings swapped (their labels stay as they were: only the embeddings disagree)."""
    manifest = json.loads((output / "_SUCCESS.json").read_text())
    paths = [output / name for name in manifest["files"]]
    table = pa.concat_tables([pq.read_table(p) for p in paths])
    rows = table.filter(pc.field("id") != drop).to_pylist()
    embeddings = {row["id"]: row["embedding"] for row in rows}
    for row in rows:
        if row["id"] == relabel:
            row["label"] = (row["label"] + 1) % len(NAMES)
            row["label_name"] = NAMES[row["label"]]
        if row["id"] == error:
            row.update(label=None, score=None, topk_labels=None, topk_scores=None, embedding=None, error="injected")
        if row["id"] in swap:
            row["embedding"] = embeddings[swap[1] if row["id"] == swap[0] else swap[0]]
    for p in paths:
        p.unlink()
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), paths[0])
    (output / "_SUCCESS.json").write_text(json.dumps({**manifest, "files": [paths[0].name]}))


def test_an_altered_output_fails_parity_with_examples_and_exit_1(compared, tmp_path):
    comparison, report, _ = compared
    altered = tmp_path / "local"
    shutil.copytree(report / "outputs" / "local", altered)
    reference = read_outcomes(str(report / "outputs" / "ray"))
    relabel, drop, error, swap = "img-00000001", "img-00000002", "img-00000003", ("img-00000004", "img-00000005")
    _alter(altered, relabel, drop, error, swap)
    parity = check_parity({"ray": reference, "local": read_outcomes(str(altered))})
    assert (parity.ok, parity.mismatches, parity.rows) == (False, 5, 12)
    swapped = parity.examples[3:]
    # A seeded network's features of two photos: close by raw cosine; from their mean, far apart.
    assert [example["id"] for example in swapped] == list(swap) and all(e["centred_cosine"] < 0.9 for e in swapped), swapped
    relabelled = (reference[relabel].label + 1) % len(NAMES)
    assert parity.examples[:3] == [
        {"id": relabel, "ray": _named(reference[relabel].label), "local": _named(relabelled)},
        {"id": drop, "ray": _named(reference[drop].label), "local": "missing"},
        {"id": error, "ray": _named(reference[error].label), "local": "error: injected"},
    ]
    results = {**comparison.results, "parity": dataclasses.asdict(parity)}
    compare_report.write_report(str(tmp_path), results)
    assert compare.Comparison(results, str(tmp_path)).exit_code == 1
    markdown = (tmp_path / "results.md").read_text()
    assert "Parity: FAILED. 5 of 12 ids disagree" in markdown and f"| {drop} | {_named(reference[drop].label)} | missing |" in markdown
    assert json.loads((tmp_path / "results.json").read_text())["parity"]["ok"] is False


def _named(label: int) -> str:
    """How parity shows a label of the checkpoint's: ``label 4 (crème brûlée)``."""
    return f"label {label} ({NAMES[label]})"


def test_a_failed_engine_fails_its_row_and_the_run(tmp_path, capfd):
    write_dataset(resolve(str(tmp_path / "in")), synthetic_rows(2, "jpeg", (64, 48), seed=0), rows_per_file=2)
    (tmp_path / "report" / "outputs" / "ray").mkdir(parents=True)
    (tmp_path / "report" / "outputs" / "ray" / "notes.txt").write_text("not ours")  # ray_job refuses this output
    comparison = compare.main(["--engines", "ray", "--input", str(tmp_path / "in"), "--weights", "random",
                               "--report", str(tmp_path / "report"), "--model-only-seconds", "0", "--batch-size", "2"])
    (row,) = comparison.results["runs"]
    assert row["failed"].startswith("exit code 2: ") and row["images_per_sec"] is None and comparison.exit_code == 1
    assert "holds files this job did not write" in row["failed"]  # the engine's own one line, carried into its row
    assert "holds files this job did not write" in capfd.readouterr().err  # and still shown as it ran
    markdown = (tmp_path / "report" / "results.md").read_text()
    assert f"| ray | failed: {row['failed']} |" in markdown and "Parity: not checked" in markdown
    assert not (tmp_path / "report" / "chart.png").exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--engines", "ray,flink"], "--engines must name each of ray, spark, sagemaker, local at most once, got 'ray,flink'"),
        (["--output", "/tmp/x"], "--output: compare writes each engine's output to <--report>/outputs/<engine>/"),
        (["--report", "s3://bucket/report"], "the report is written locally"),
        (["--engines", "ray", "--engine-args", "spark=--master local[1]"], "ENGINE one of ray"),
        (["--engine-args", "ray=--batch-s 4"], "--engine-args ray: --batch-size is the same for every engine; pass it to compare"),
        (["--engine-args", "ray=--batch 4"], "--engine-args ray: ambiguous option: --batch could match --batch-size, --batch-timeout"),
        (["--engine-args", "spark=--nope 1"], "--engine-args spark: --nope 1 is not an option of runners.spark_job"),
        (["--engine-args", "ray=--num-cpu-actors 0"], "--engine-args ray: argument --num-cpu-actors: must be an integer >= 1, got 0"),
    ],
)
def test_bad_options_are_one_line_before_any_work(argv, message, capsys):
    assert run_main(compare.main, argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
