"""Ray and Spark agree, whoever decodes: ``--decode cpu``, ``gpu`` and ``auto`` end to end on the CPU device.

Without CUDA the device path decodes with libjpeg-turbo on the predictor's CPU; the routing,
the CPU fallback and the error rows are the same code as on a GPU. Ray runs its three modes once
for the module, in a subprocess (``tests.common.ray_runs``), so that this module's Spark and a
Ray never share a process.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from job.cli import run_main
from runners import spark_job
from tests.common.contract import assert_output_contract, read_output
from tests.common.datasets import write_mixed
from tests.common.embeddings import assert_same_features, embeddings_of
from tests.common.ray_runs import run_ray_jobs
from tests.common.spark import local_spark

MODES = ("cpu", "gpu", "auto")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> tuple[Path, list[str], dict[str, str]]:
    """The mixed dataset (odd and bad images among photos): (root, ids, bad ids)."""
    root = tmp_path_factory.mktemp("decode")
    ids, bad = write_mixed(str(root / "in"))
    return root, ids, bad


@pytest.fixture(scope="module")
def ray_outputs(mixed) -> dict[str, Path]:
    """The Ray job once per decode mode, with embeddings: {mode: output}."""
    root = mixed[0]
    run_ray_jobs([["--input", str(root / "in"), "--output", str(root / mode), "--weights", "random", "--batch-size", "8",
                   "--decode", mode, "--embeddings"] for mode in MODES])
    return {mode: root / mode for mode in MODES}


@pytest.fixture(scope="module")
def spark_outputs(mixed) -> dict[str, Path]:
    """The Spark job with the CPU and the device decoding: {mode: output}."""
    root = mixed[0]
    with local_spark():
        for mode in ("cpu", "gpu"):
            spark_job.main(["--input", str(root / "in"), "--output", str(root / f"spark-{mode}"), "--weights", "random",
                            "--batch-size", "8", "--decode", mode])
    return {mode: root / f"spark-{mode}" for mode in ("cpu", "gpu")}


@pytest.mark.slow  # CI: the local job decodes on the device end to end (below), routing and decoding in tests/unit
def test_ray_and_spark_predict_the_same(ray_outputs, spark_outputs):
    ray_rows, _ = read_output(str(ray_outputs["cpu"]))
    spark_rows = {r["id"]: r for r in read_output(str(spark_outputs["cpu"]))[0]}
    assert len(ray_rows) == len(spark_rows)
    for row in ray_rows:
        other = spark_rows[row["id"]]
        assert (other["label"], other["topk_labels"], other["error"]) == (row["label"], row["topk_labels"], row["error"]), row["id"]
        if row["topk_scores"] is not None:
            np.testing.assert_allclose(other["topk_scores"], row["topk_scores"], atol=1e-4)


@pytest.mark.slow  # CI: the local job decodes on the device end to end (below), routing and decoding in tests/unit
def test_ray_and_spark_decode_on_the_device_and_agree(mixed, ray_outputs, spark_outputs):
    _, ids, bad = mixed
    ray_rows, ray_manifest = read_output(str(ray_outputs["gpu"]))
    spark_rows, spark_manifest = read_output(str(spark_outputs["gpu"]))
    assert_output_contract(ray_rows, ray_manifest, ids, bad)
    assert_output_contract(spark_rows, spark_manifest, ids, bad)
    assert ray_manifest["config"]["decode"] == spark_manifest["config"]["decode"] == "gpu"
    spark_by_id = {r["id"]: r for r in spark_rows}
    for row in ray_rows:
        assert (row["label"], row["error"]) == (spark_by_id[row["id"]]["label"], spark_by_id[row["id"]]["error"]), row["id"]


@pytest.mark.slow  # CI: the local job decodes on the device end to end (below), routing and decoding in tests/unit
def test_ray_error_rows_are_the_same_whatever_decodes(mixed, ray_outputs):
    """cpu, gpu and auto: the same rows errored with the same words, the same labels and embeddings elsewhere."""
    _, ids, bad = mixed
    outcomes = {}
    for mode in MODES:
        rows, manifest = read_output(str(ray_outputs[mode]))
        assert_output_contract(rows, manifest, ids, bad)
        assert manifest["config"]["decode"] == mode
        outcomes[mode] = {r["id"]: r["error"] for r in rows}
    assert outcomes["cpu"] == outcomes["gpu"] == outcomes["auto"]
    # Pixels differ by resampling rounding between the paths (about 0.5 levels), which moves a random
    # network's features' small differences from their mean by up to 0.5% (cosine 0.9957 seen); a
    # different photo is far below 0.9.
    for mode in ("gpu", "auto"):
        assert_same_features(embeddings_of(ray_outputs[mode]), embeddings_of(ray_outputs["cpu"]), min_cosine=0.99)


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
