"""The Ray job end to end on a real local Ray, real Parquet, real images and a real S3 server."""

from __future__ import annotations

import boto3
import numpy as np
import pyarrow.parquet as pq
import pytest

from job.input.data_files import FileIdentity
from job.output.parts import part_name
from runners import make_dataset, ray_job
from job.cli import run_main
from job.config import JobConfig
from job.input.plan import read_file
from job.prepare import plan_input
from job.stages import Classify, Preprocess
from storage import resolve
from job import progress
from tests.common.contract import assert_output_contract, assert_progress_shown, assert_timeline, read_output
from tests.common.datasets import write_mixed
from tests.common.plans import cpu_execution


pytestmark = pytest.mark.usefixtures("local_ray")  # one local Ray for the module (tests/conftest.py)


def run(*argv: str) -> dict:
    return ray_job.main(["--weights", "random", "--batch-size", "8", *argv])


def test_s3_in_s3_out_meets_the_output_contract(s3_bucket, s3_env, monkeypatch, capsys):
    monkeypatch.setattr(progress, "LOG_EVERY_SECONDS", 0.2)  # the display's log lines, at test speed
    ids, bad = write_mixed(f"s3://{s3_bucket}/images/", s3_env)
    # Batches of 2: enough model batches (13) for a steady rate (job.timeline.STEADY_MIN_EVENTS).
    manifest = run("--input", f"s3://{s3_bucket}/images/", "--output", f"s3://{s3_bucket}/preds/", "--s3-endpoint-url", s3_env,
                   "--batch-size", "2")
    rows, written = read_output(f"s3://{s3_bucket}/preds/", s3_env)
    assert written == manifest and manifest["engine"] == "ray"
    assert_output_contract(rows, manifest, ids, bad)
    assert "ray" in manifest["versions"] and manifest["settings"]["scaling"]["gpus"] == 0
    assert_timeline(manifest, steady_at_least_whole=True)  # 3 input files: start-up, then a full pipeline
    assert_progress_shown(capsys.readouterr().err, "ray", len(ids))


def test_rerun_refuses_then_overwrite_replaces_and_resume_redoes_only_what_is_missing(s3_bucket, s3_env, capsys):
    write_mixed(f"s3://{s3_bucket}/in/", s3_env)
    args = ["--input", f"s3://{s3_bucket}/in/", "--output", f"s3://{s3_bucket}/out/", "--s3-endpoint-url", s3_env, "--limit", "11"]
    first = run(*args)
    assert run_main(ray_job.main, ["--weights", "random", *args]) == 2
    assert "already holds a finished job (_SUCCESS.json); pass --incremental to run what the input gained since, --overwrite" in capsys.readouterr().err
    second = run(*args, "--overwrite")
    rows, manifest = read_output(f"s3://{s3_bucket}/out/", s3_env)
    assert manifest["run_id"] == second["run_id"] != first["run_id"]
    assert len(rows) == 11 == len({r["id"] for r in rows}) and len(manifest["files"]) == 2  # 9 + 2 rows of two input files
    # What a run killed on S3 leaves: parts, no manifest. --resume redoes only the file without a part.
    s3 = boto3.client("s3", endpoint_url=s3_env)
    s3.delete_object(Bucket=s3_bucket, Key="out/_SUCCESS.json")
    s3.delete_object(Bucket=s3_bucket, Key=f"out/{manifest['files'][1]}")
    third = run(*args, "--resume")
    assert third["input_files"] == {"total": 2, "resumed": 1, "run": 1, "rows_run": 2}  # files[1] is part-00001's part
    resumed_rows, written = read_output(f"s3://{s3_bucket}/out/", s3_env)
    assert written == third and sorted(r["id"] for r in resumed_rows) == sorted(r["id"] for r in rows)


def test_local_paths_without_id_column_and_limit(tmp_path):
    ids, _ = write_mixed(str(tmp_path / "src"))
    # Drop the id column: ids become "<path relative to --input>:<row index>".
    for path in sorted((tmp_path / "src").glob("*.parquet")):
        pq.write_table(pq.read_table(path).drop_columns(["id"]), path)
    manifest = run("--input", str(tmp_path / "src"), "--output", str(tmp_path / "out"), "--limit", "12")
    rows, _ = read_output(str(tmp_path / "out"))
    expected = [f"part-00000.parquet:{i}" for i in range(9)] + [f"part-00001.parquet:{i}" for i in range(3)]
    assert sorted(r["id"] for r in rows) == sorted(expected) and manifest["counts"]["rows_in"] == 12
    # One part per input file, named after it and its version.
    src = str(tmp_path / "src")
    entries = manifest["table"]["files"]
    assert manifest["files"] == sorted(part_name(src, f"{src}/{name}", FileIdentity.from_dict(entries[name]))
                                       for name in ("part-00000.parquet", "part-00001.parquet"))


def test_raw_format_matches_the_shared_stages_run_directly(tmp_path):
    """Ray's output equals calling the shared stages in-process: the adapter adds nothing."""
    make_dataset.main(["--output", str(tmp_path / "raw"), "--images", "10", "--format", "raw", "--rows-per-file", "4"])
    run("--input", str(tmp_path / "raw"), "--output", str(tmp_path / "out"))
    rows, manifest = read_output(str(tmp_path / "out"))
    assert manifest["counts"]["predicted"] == 10
    config = JobConfig(input=str(tmp_path / "raw"), output=None, weights="random", decode="cpu")
    plan = plan_input(resolve(config.input), config)
    preprocess, classify = Preprocess(config, cpu_execution(config)), Classify(config, cpu_execution(config))
    expected = []
    for file in plan.files:
        for ids, batch in read_file(plan, file, batch_rows=64):
            expected += classify(preprocess(ids, batch)).to_pylist()
    by_id = {r["id"]: r for r in rows}
    for row in expected:
        assert by_id[row["id"]]["topk_labels"] == row["topk_labels"]
        np.testing.assert_allclose(by_id[row["id"]]["topk_scores"], row["topk_scores"], atol=1e-4)


@pytest.mark.slow  # CI: README's first command runs it as written (tests/docs)
def test_built_in_sample_runs_with_no_arguments(capsys):
    manifest = ray_job.main([])
    assert manifest["config"]["weights"] == "random"
    assert manifest["counts"] == {"rows_in": 50, "rows_out": 50, "predicted": 48, "errored": 2, "withheld": 0}
    out = capsys.readouterr()
    assert "ray: 50 images (48 predicted, 2 errors)" in out.out and "built-in sample" in out.err
