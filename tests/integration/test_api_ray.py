"""``runners.ray.api.classify`` inside a user's Ray pipeline gives the command's rows, on a real local Ray."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import ray
from ray.data.expressions import col

from job.errors import JobError
from runners import ray_job
from runners.ray.api import classify
from tests.common.api_rows import assert_same_rows
from tests.common.contract import read_output
from tests.common.datasets import write_mixed



@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One local Ray for the module, as tests/conftest.py's but with 3 CPUs: the user's read tasks need one
    beside the decoder's and the model's actors (with 2, ``classify`` says they would wait)."""
    ray.init(address="local", num_cpus=3, include_dashboard=False, logging_level="WARNING")
    yield
    ray.shutdown()

OPTIONS = {"weights": "random", "batch_size": 8, "embeddings": "with"}


def test_a_users_pipeline_gives_the_commands_rows(tmp_path):
    ids, bad = write_mixed(str(tmp_path / "in"))
    ray_job.main(["--input", str(tmp_path / "in"), "--output", str(tmp_path / "command"), "--weights", "random",
                  "--batch-size", "8", "--embeddings", "with"])
    command_rows, _ = read_output(str(tmp_path / "command"))
    # The user's pipeline: read, filter, our step, write.
    images = ray.data.read_parquet(str(tmp_path / "in")).filter(expr=col("id") != ids[0])
    classify(images, **OPTIONS).write_parquet(str(tmp_path / "user"))
    user_rows = pq.read_table(str(tmp_path / "user")).to_pylist()
    assert_same_rows(user_rows, [row for row in command_rows if row["id"] != ids[0]])
    assert {row["id"] for row in user_rows if row["error"]} == set(bad)  # bad images are rows, not failed blocks


def test_rows_without_ids_get_unique_ids_and_a_bad_option_is_one_line_before_any_work(capsys):
    images = ray.data.from_arrow(pa.table({"picture": [b"not an image", b""]}))
    rows = classify(images, weights="random", image_column="picture").take_all()
    assert len({row["id"] for row in rows}) == 2 and all(row["error"] for row in rows)
    classify(images, weights="random", num_cpu_actors=2)  # planned, not run: 2 decoders + 1 model take the 3 CPUs
    assert "classify: its 2 decoder and 1 model actors take all 3 CPUs of the Ray cluster" in capsys.readouterr().err
    with pytest.raises(JobError, match="^precision='fp8'|^--precision must be one of"):
        classify(images, weights="random", precision="fp8")
    with pytest.raises(JobError, match="^input='x': not an option of classify"):
        classify(images, input="x")
