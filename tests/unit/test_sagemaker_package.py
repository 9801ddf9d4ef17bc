"""model.tar.gz is self-contained: its handler loads from code/ alone, as in the container."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile

from job.config import JobConfig
from runners.sagemaker import package

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
    tar = package.build_model_tar(JobConfig(input=None, output=None, weights="random", topk=3), str(tmp_path))
    names = tarfile.open(tar).getnames()
    assert {"serving.json", "code/handler.py", "code/requirements.txt", "code/job/stages.py", "code/job/driver.py"} <= set(names)
    assert "code/inference.py" not in names and "model.pth" not in names and not any("__pycache__" in n for n in names)
    model = package.unpack(tar, str(tmp_path / "model"))
    assert json.load(open(f"{model}/serving.json"))["weights"] == "random"
    repo, code = os.getcwd(), f"{model}/code"
    result = subprocess.run([sys.executable, "-c", LOAD.format(repo=repo, code=code, model=model)], cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": code}, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["3", "random"]


def test_user_weights_travel_as_a_state_dict(tmp_path):
    import torch

    from inference import load_model
    from runners.sagemaker.serving import handler

    weights = tmp_path / "weights.pth"
    torch.save(load_model("random").module.state_dict(), weights)
    tar = package.build_model_tar(JobConfig(input=None, output=None, weights=str(weights)), str(tmp_path))
    model = handler.model_fn(package.unpack(tar, str(tmp_path / "model")))
    assert model.config.weights == f"{tmp_path}/model/model.pth"
    reference = load_model("random").module.state_dict()
    loaded = model.classify.predictor._model.state_dict()
    assert all(torch.equal(loaded[k], reference[k]) for k in ("fc.weight", "conv1.weight"))
