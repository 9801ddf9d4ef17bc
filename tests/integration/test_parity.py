"""Ray and Spark give the same predictions for the same input and weights.

The Ray reference runs in a subprocess, so this module's Spark and a Ray never share a process.
"""

from __future__ import annotations

import numpy as np

from tests.common.contract import read_output
from tests.common.datasets import write_mixed
from tests.common.spark import run_ray_then_spark


def test_ray_and_spark_predict_the_same(tmp_path):
    write_mixed(str(tmp_path / "in"))
    common = ["--input", str(tmp_path / "in"), "--weights", "random", "--batch-size", "8"]
    ray_out, spark_out = run_ray_then_spark(common, tmp_path)
    ray_rows, _ = read_output(ray_out)
    spark_rows = {r["id"]: r for r in read_output(spark_out)[0]}
    assert len(ray_rows) == len(spark_rows)
    for row in ray_rows:
        other = spark_rows[row["id"]]
        assert (other["label"], other["topk_labels"], other["error"]) == (row["label"], row["topk_labels"], row["error"]), row["id"]
        if row["topk_scores"] is not None:
            np.testing.assert_allclose(other["topk_scores"], row["topk_scores"], atol=1e-4)
