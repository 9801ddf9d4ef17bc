"""model.tar.gz is self-contained: its handler loads from code/ alone, and on AWS it installs
what the image lacks from its own wheels, with no index (the model has no network)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from importlib.metadata import version

from job.config import JobConfig
from runners.sagemaker import container, package
from runners.sagemaker.imports import modules_imported_by
from runners.sagemaker.serving import handler
from tests.common.plans import cpu_execution
from tests.common.extras import library_or_skip
from tests.common.sagemaker import image_wheelhouse

RANDOM = JobConfig(input=None, output=None, weights="random", topk=3)
# Loads the handler with only the unpacked code/ importable (the repo is taken off sys.path).
LOAD = """
import sys
sys.path = [p for p in sys.path if p not in ("", {repo!r})]
import handler, runners
assert runners.__file__.startswith({code!r}), runners.__file__
model = handler.model_fn({model!r})
print(model.config.topk, model.config.weights)
"""


def test_package_layout_and_handler_loads_from_code_alone(tmp_path):
    tar = package.build_model_tar(RANDOM, cpu_execution(RANDOM), str(tmp_path))
    names = tarfile.open(tar).getnames()
    assert {"serving.json", "code/handler.py", "code/job/stages.py", "code/job/execution.py"} <= set(names)
    # What the handler imports, and nothing else: no engine, no driver, no SageMaker SDK code.
    assert {n for n in names if n.startswith("code/") and n.endswith(".py")} == \
        {"code/handler.py", *(f"code/{name}" for _, name in modules_imported_by(handler.__file__))}
    assert not [n for n in names if n.startswith(("code/runners/ray", "code/runners/spark", "code/job/driver"))]
    assert "code/inference.py" not in names and "model.pth" not in names and not any("__pycache__" in n for n in names)
    assert "code/requirements.txt" not in names, "--local runs here: nothing to install"
    model = package.unpack(tar, str(tmp_path / "model"))
    assert json.load(open(f"{model}/serving.json"))["execution"]["model"]["weights"] == "random"
    repo, code = os.getcwd(), f"{model}/code"
    result = subprocess.run([sys.executable, "-c", LOAD.format(repo=repo, code=code, model=model)], cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": code}, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["3", "random"]


def test_the_program_the_container_runs_is_shipped(tmp_path):
    names = tarfile.open(package.build_model_tar(RANDOM, cpu_execution(RANDOM), str(tmp_path))).getnames()
    assert f"code/{container.environment(6)['SAGEMAKER_PROGRAM']}" in names


def test_aws_archive_installs_its_requirements_with_no_index(tmp_path):
    wheels = sorted(image_wheelhouse(tmp_path / "wheels").glob("*.whl"))
    tar = package.build_model_tar(RANDOM, cpu_execution(RANDOM), str(tmp_path), wheels)
    model = package.unpack(tar, str(tmp_path / "model"))
    assert sorted(os.listdir(f"{model}/code/wheels")) == [wheel.name for wheel in wheels]
    # The toolkit runs `pip install -r code/requirements.txt` at start-up; here the same for the
    # image's Python and platform, with every index unreachable, as under network isolation.
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--only-binary=:all:",
               "--python-version", container.PYTHON_VERSION, "--platform", container.WHEEL_PLATFORMS[0],
               "--target", str(tmp_path / "site"), "-r", f"{model}/code/requirements.txt"]
    offline = {**os.environ, "PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_RETRIES": "0", "PIP_TIMEOUT": "2"}
    done = subprocess.run(command, cwd=tmp_path, env=offline, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"pyarrow-{version('pyarrow')}" in done.stdout and f"simplejpeg-{version('simplejpeg')}" in done.stdout


def test_user_weights_travel_with_their_names_recipe_and_architecture(tmp_path):
    import hashlib

    import torch

    from tests.common.checkpoints import fine_tuned_checkpoint

    names = [f"kind {i}" for i in range(10)]
    reference = fine_tuned_checkpoint(tmp_path / "ddp.pt", 10, "ddp", class_names=names, recipe={"resize": 256})
    config = JobConfig(input=None, output=None, weights=str(tmp_path / "ddp.pt"), crop=200, embeddings="with")
    tar = package.build_model_tar(config, cpu_execution(config), str(tmp_path))
    unpacked = package.unpack(tar, str(tmp_path / "model"))
    saved = torch.load(f"{unpacked}/model.pth", weights_only=True)  # one file a reader can use alone
    assert (saved["class_names"], saved["recipe"]["resize"], saved["recipe"]["crop"]) == (names, 256, 200)
    archived = json.load(open(f"{unpacked}/serving.json"))["execution"]["model"]
    assert (archived["arch"], archived["weights"], archived["num_classes"]) == ("resnet50", "model.pth", 10)
    assert archived["weights_sha256"] == hashlib.sha256(open(f"{unpacked}/model.pth", "rb").read()).hexdigest()
    model = handler.model_fn(unpacked)
    # What the container loads is the plan's model (the config carries the stages' options only).
    assert model.execution.model.weights == f"{tmp_path}/model/model.pth" and model.execution.model.class_names == tuple(names)
    assert model.execution.recipe.to_dict() == {**saved["recipe"]} and model.execution.embeddings == "float32"
    loaded = model.classify.predictor._model.state_dict()  # the network split into body and head (embeddings)
    expected = reference.state_dict()
    assert torch.equal(loaded["head.weight"], expected["fc.weight"]) and torch.equal(loaded["body.conv1.weight"], expected["conv1.weight"])


def test_a_folder_source_and_a_timm_checkpoint_travel_in_the_archive(tmp_path):
    import torch

    library_or_skip("timm", "timm")
    library_or_skip("transformers", "hf")

    from tests.common.model_sources import hf_folder, timm_checkpoint

    timm_checkpoint(tmp_path / "vit.pt", "test_vit")
    hf = JobConfig(input=None, output=None, model=f"hf:{hf_folder(tmp_path / 'vit', 'vit')}", embeddings="with")
    timm = JobConfig(input=None, output=None, model="timm:test_vit", weights=str(tmp_path / "vit.pt"))
    images = torch.rand(2, 3, 224, 224)
    for name, config in (("hf", hf), ("timm", timm)):
        execution = cpu_execution(config)
        unpacked = package.unpack(package.build_model_tar(config, execution, str(tmp_path)), str(tmp_path / name))
        archived = json.load(open(f"{unpacked}/serving.json"))["execution"]["model"]
        assert not os.path.exists(f"{unpacked}/models"), "one model's files lie at the top (models/<n>/: several)"
        model = handler.model_fn(unpacked)  # loads from the archive alone: the folder's copy, or model.pth
        if name == "hf":
            assert archived["location"] == handler.MODEL_FOLDER and os.path.exists(f"{unpacked}/model/model.safetensors")
            assert archived["weights_sha256"] == execution.model.weights_sha256  # the same bytes
        else:
            assert archived["weights"] == "model.pth" and archived["source"] == "timm:test_vit"
        with torch.inference_mode():
            mine = model.classify.predictor._model(images)[1]
            theirs = package.load_model(execution.model).module(images) if name == "timm" else None
        assert mine.shape == (2, 10) and (theirs is None or torch.allclose(mine, theirs, atol=1e-5))


def test_several_models_each_travel_in_their_own_folder_and_load_once(tmp_path):
    """Two timm checkpoints (each a model.pth) and a Hugging Face folder in one archive: no file collides, the top
    holds no model's files (that layout is one model's), and the handler loads every model and runs only those that
    score a shard's input file."""
    import pyarrow as pa

    from job.engine import ModelRun
    from job.output.parts import FILE
    from job.several.stages import rows_of_blob
    from tests.common.datasets import mixed_rows

    library_or_skip("timm", "timm")
    library_or_skip("transformers", "hf")
    from tests.common.model_sources import hf_folder, timm_checkpoint

    timm_checkpoint(tmp_path / "vit.pt", "test_vit")
    timm_checkpoint(tmp_path / "efficientnet.pt", "test_efficientnet")
    configs = [JobConfig(input=None, output=None, model="timm:test_vit", weights=str(tmp_path / "vit.pt")),
               JobConfig(input=None, output=None, model="timm:test_efficientnet",
                         weights=str(tmp_path / "efficientnet.pt")),
               JobConfig(input=None, output=None, model=f"hf:{hf_folder(tmp_path / 'vit', 'vit')}", embeddings="only")]
    scores = [None, frozenset({1}), frozenset({0})]  # the run's input files each model scores
    runs = [ModelRun(cpu_execution(config), None, files) for config, files in zip(configs, scores)]
    tar = package.build_model_tar(configs[0], runs[0].execution, str(tmp_path), models=runs)
    names = set(tarfile.open(tar).getnames())
    assert {"models/0/model.pth", "models/1/model.pth", "models/2/model/model.safetensors"} <= names
    assert not {"model.pth", "model", "models/2/model.pth"} & names and not any(n.startswith("model/") for n in names)
    unpacked = package.unpack(tar, str(tmp_path / "model"))
    serving = json.load(open(f"{unpacked}/serving.json"))
    assert "execution" not in serving and [(m["folder"], m["files"]) for m in serving["models"]] == \
        [("models/0", None), ("models/1", [1]), ("models/2", [0])]
    model = handler.model_fn(unpacked)
    weights = [run.execution.model.weights for run in model.runs[:2]]
    assert weights == [f"{unpacked}/models/{n}/model.pth" for n in (0, 1)]
    assert model.runs[2].execution.model.location == f"{unpacked}/models/2/model"
    rows = mixed_rows(good=2)
    shard = pa.table({"id": [i for i, _ in rows], "image": pa.array([d for _, d in rows], pa.binary()),
                      FILE: pa.array([1] * len(rows), pa.int32())})
    answered = dict(rows_of_blob(handler.predict_fn(shard, model)))
    assert sorted(answered) == [0, 1]  # the embedder scores file 0 only: not run on file 1's rows
    assert all(table.column("id").to_pylist() == [i for i, _ in rows] for table in answered.values())
