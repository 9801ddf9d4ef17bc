"""``--decode gpu`` and ``auto`` end to end on the CPU device: every engine meets the output contract, and agrees.

Without CUDA the device path decodes with libjpeg-turbo on the predictor's CPU; the routing,
the CPU fallback and the error rows are the same code as on a GPU. Ray runs in a subprocess so
that this module's Spark and a Ray never share a process (``tests.common.spark.run_ray_then_spark``).
"""

from __future__ import annotations

import subprocess
import sys

from job.cli import run_main
from runners import spark_job
from tests.common.embeddings import assert_same_features, embeddings_of
from tests.common.contract import assert_output_contract, read_output
from tests.common.datasets import write_mixed
from tests.common.spark import run_ray_then_spark


def test_ray_and_spark_decode_on_the_device_and_agree(tmp_path):
    ids, bad = write_mixed(str(tmp_path / "in"))
    common = ["--input", str(tmp_path / "in"), "--weights", "random", "--batch-size", "8", "--decode", "gpu"]
    ray_out, spark_out = run_ray_then_spark(common, tmp_path)
    ray_rows, ray_manifest = read_output(ray_out)
    spark_rows, spark_manifest = read_output(spark_out)
    assert_output_contract(ray_rows, ray_manifest, ids, bad)
    assert_output_contract(spark_rows, spark_manifest, ids, bad)
    assert ray_manifest["config"]["decode"] == spark_manifest["config"]["decode"] == "gpu"
    spark_by_id = {r["id"]: r for r in spark_rows}
    for row in ray_rows:
        assert (row["label"], row["error"]) == (spark_by_id[row["id"]]["label"], spark_by_id[row["id"]]["error"]), row["id"]


def test_ray_error_rows_are_the_same_whatever_decodes(tmp_path):
    """cpu, gpu and auto: the same rows errored with the same words, the same labels and embeddings elsewhere."""
    ids, bad = write_mixed(str(tmp_path / "in"))
    outcomes = {}
    for mode in ("cpu", "gpu", "auto"):
        out = str(tmp_path / mode)
        subprocess.run([sys.executable, "-m", "runners.ray_job", "--input", str(tmp_path / "in"), "--output", out, "--weights",
                        "random", "--batch-size", "8", "--decode", mode, "--embeddings"], check=True)
        rows, manifest = read_output(out)
        assert_output_contract(rows, manifest, ids, bad)
        assert manifest["config"]["decode"] == mode
        outcomes[mode] = {r["id"]: r["error"] for r in rows}
    assert outcomes["cpu"] == outcomes["gpu"] == outcomes["auto"]
    # Pixels differ by resampling rounding between the paths (about 0.5 levels), which moves a random
    # network's features' small differences from their mean by up to 0.5% (cosine 0.9957 seen); a
    # different photo is far below 0.9.
    for mode in ("gpu", "auto"):
        assert_same_features(embeddings_of(tmp_path / mode), embeddings_of(tmp_path / "cpu"), min_cosine=0.99)


def test_sagemaker_and_series_udf_refuse_gpu_decode_in_one_line(tmp_path, capsys):
    from runners import sagemaker_job

    common = ["--input", str(tmp_path), "--decode", "gpu"]
    assert run_main(sagemaker_job.main, [*common, "--local"]) == 2
    assert run_main(spark_job.main, [*common, "--udf", "series"]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 2 and all("--decode gpu" in line for line in errors), errors
    assert run_main(spark_job.main, [*common, "--raw-shape", "8,8,3"]) == 2
    assert "raw pixels" in capsys.readouterr().err


def test_local_job_decodes_on_the_device(tmp_path):
    from runners import local_job

    ids, bad = write_mixed(str(tmp_path / "in"))
    manifest = local_job.main(["--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--weights", "random",
                               "--batch-size", "8", "--decode", "gpu", "--workers", "1"])
    rows, written = read_output(str(tmp_path / "out"))
    assert written == manifest and manifest["config"]["decode"] == "gpu"
    assert_output_contract(rows, manifest, ids, bad)
