"""``runners.ray.api.classify`` inside a user's Ray pipeline gives the command's rows, on a real local Ray of 2 CPUs
(a laptop's): the README's example finishes, Ray's own image readers need no argument, a bad call is one line."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import ray
from ray.data.expressions import col

from job.errors import JobError
from runners import local_job
from runners.ray.api import classify, fit_to_cluster
from runners.ray.cluster import Scaling
from tests.common.api_rows import assert_same_rows
from tests.common.contract import read_output
from tests.common.datasets import write_mixed
from tests.common.image_files import write_image_files

pytestmark = pytest.mark.usefixtures("local_ray")  # tests/conftest.py: ray.init(num_cpus=2)


def test_the_readmes_example_finishes_on_two_cpus_with_the_commands_rows(tmp_path):
    ids, bad = write_mixed(str(tmp_path / "in"))
    # The command's rows, from the local engine: every engine writes the same rows (runners.compare holds them to it).
    local_job.main(["--input", str(tmp_path / "in"), "--output", str(tmp_path / "command"), "--weights", "random",
                    "--batch-size", "256", "--embeddings", "with", "--workers", "0"])
    command_rows, _ = read_output(str(tmp_path / "command"))
    # README.md's Ray example as written, but local paths for S3 and random weights (offline): read, filter, our step, write.
    images = ray.data.read_parquet(str(tmp_path / "in")).filter(expr=col("id") != ids[0])
    predictions = classify(images, weights="random", embeddings="with", batch_size=256)
    predictions.write_parquet(str(tmp_path / "user"))
    user_rows = pq.read_table(str(tmp_path / "user")).to_pylist()
    assert_same_rows(user_rows, [row for row in command_rows if row["id"] != ids[0]])
    assert {row["id"] for row in user_rows if row["error"]} == set(bad)  # bad images are rows, not failed blocks


def test_rays_image_readers_need_no_argument(tmp_path):
    names = write_image_files(tmp_path / "files")
    tensors = classify(ray.data.read_images(str(tmp_path / "files"), include_paths=True), weights="random", id_column="path")
    encoded = classify(ray.data.read_binary_files(str(tmp_path / "files")), weights="random")
    for rows in (tensors.take_all(), encoded.take_all()):
        assert len(rows) == len(names) and [row["error"] for row in rows] == [None] * len(names)
    assert sorted(row["id"].rsplit("/", 1)[-1] for row in tensors.take_all()) == names


def test_a_bad_call_is_one_line_naming_the_argument_before_any_work():
    images = ray.data.from_arrow(pa.table({"picture": [b"not an image", b""], "name": ["a", "b"]}))
    rows = classify(images, weights="random").take_all()  # the one binary column is the image column
    assert len({row["id"] for row in rows}) == 2 and all(row["error"] for row in rows)
    with pytest.raises(JobError, match=r"^image_column='photo': the rows have no such column \(they have picture, name\)"):
        classify(images, weights="random", image_column="photo")
    with pytest.raises(JobError, match="^image_column='name' has type string; the job reads image bytes"):
        classify(images, weights="random", image_column="name")
    with pytest.raises(JobError, match="^precision= must be one of .*, got 'fp8'$"):
        classify(images, weights="random", precision="fp8")
    with pytest.raises(JobError, match="^batch_size=0 must be positive"):
        classify(images, weights="random", batch_size=0)
    with pytest.raises(JobError, match="^num_cpu_actors=0: pass a positive number"):
        classify(images, weights="random", num_cpu_actors=0)
    with pytest.raises(JobError, match="^input='x': not an option of classify"):
        classify(images, input="x")


def test_the_ray_calls_actors_leave_the_pipeline_a_cpu():
    laptop = Scaling(gpus=0, classify_actors=1, preprocess_actors=1, preprocess_initial=1, batch_size=32)
    assert fit_to_cluster(laptop, cpus=2).actor_cpus == 0.5  # the decoder and the model share one, read/write get one
    assert fit_to_cluster(laptop, cpus=3).actor_cpus == 1.0
    asked = Scaling(gpus=0, classify_actors=1, preprocess_actors=4, preprocess_initial=4, batch_size=32)
    assert fit_to_cluster(asked, cpus=4).actor_cpus == 0.6
    with pytest.raises(JobError, match=r"^classify: the Ray cluster has 1 CPU; .*: start Ray with more, e.g. ray.init\(num_cpus=2\)$"):
        fit_to_cluster(laptop, cpus=1)


def test_several_models_in_one_call_give_a_dataset_a_model_with_its_own_rows(tmp_path):
    from tests.common.api_rows import TWO_MODELS, assert_each_models_rows

    write_mixed(str(tmp_path / "in"))
    images = ray.data.read_parquet(str(tmp_path / "in"))
    several = classify(images, models=TWO_MODELS, batch_size=8)
    alone = [classify(images, **entry, batch_size=8).take_all() for entry in TWO_MODELS]
    assert_each_models_rows([dataset.take_all() for dataset in several], alone)
