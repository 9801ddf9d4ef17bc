"""Weights: a state dict loads with weights_only=True; anything unusable stops with the fix.

The checkpoint layouts and their one-line refusals: test_checkpoint.py; what the driver
decides (classes, names, recipe): test_model_spec.py.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch
from torchvision.models import resnet50

from inference import Predictor, WeightsError, load_model


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    torch.manual_seed(123)
    module = resnet50(weights=None)
    path = tmp_path_factory.mktemp("weights") / "resnet50.pt"
    torch.save(module.state_dict(), path)
    return path, module


def test_state_dict_checkpoint_loads_exactly(checkpoint):
    path, module = checkpoint
    loaded = load_model(str(path)).module
    for name, tensor in module.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], tensor), name


def test_wrapped_state_dict_loads(checkpoint, tmp_path):
    path, module = checkpoint
    wrapped = tmp_path / "wrapped.pt"
    torch.save({"state_dict": module.state_dict(), "epoch": 3}, wrapped)
    pixels = np.random.default_rng(0).integers(0, 255, (2, 224, 224, 3), dtype=np.uint8)
    cpu = torch.device("cpu")
    assert np.array_equal(Predictor(load_model(str(wrapped)), cpu, "fp32", 1)(pixels).label, Predictor(load_model(str(path)), cpu, "fp32", 1)(pixels).label)


def test_missing_file_names_the_option(tmp_path):
    with pytest.raises(WeightsError, match="cannot read weights .*nope.pt"):
        load_model(str(tmp_path / "nope.pt"))


def test_wrong_architecture_is_refused_naming_the_keys(tmp_path):
    path = tmp_path / "linear.pt"
    torch.save(torch.nn.Linear(3, 4).state_dict(), path)
    with pytest.raises(WeightsError, match=r"not a resnet50 state dict: \d+ missing keys \(conv1.weight, .*"
                                           r"2 unexpected keys \(weight, bias\)") as refused:
        load_model(str(path))
    assert "\n" not in str(refused.value)


def test_pickled_objects_are_refused_by_weights_only(tmp_path):
    path = tmp_path / "module.pt"
    torch.save(torch.nn.Linear(3, 4), path)  # a whole pickled module, not a state dict
    with pytest.raises(WeightsError, match="not a loadable state dict: it needs torch.nn.modules.linear.Linear"):
        load_model(str(path))


def test_imagenet_without_network_says_use_random(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))  # empty cache
    for proxy in ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY"):
        monkeypatch.setenv(proxy, "http://127.0.0.1:9")  # a closed loopback port: no network
    with pytest.raises(WeightsError, match="--weights random"):
        load_model("imagenet")


def test_our_resnet50_is_torchvisions_bit_for_bit():
    """Same parameter names and shapes, same seeded random weights, same outputs."""
    from inference.resnet import ResNet50

    torch.manual_seed(7)
    theirs = resnet50(weights=None).eval()
    torch.manual_seed(7)
    ours = ResNet50().eval()
    for (name, a), (other, b) in zip(theirs.state_dict().items(), ours.state_dict().items(), strict=True):
        assert name == other and torch.equal(a, b), name
    x = torch.randn(2, 3, 224, 224)
    with torch.inference_mode():
        assert torch.equal(theirs(x), ours(x))


def test_eval_recipe_is_torchvisions():
    from torchvision.models import ResNet50_Weights

    from inference.weights import IMAGENET_URL
    from preprocess.recipe import IMAGENET_RECIPE

    weights = ResNet50_Weights.DEFAULT
    transforms = weights.transforms()
    assert (IMAGENET_RECIPE.resize, IMAGENET_RECIPE.crop) == (transforms.resize_size[0], transforms.crop_size[0])
    assert (IMAGENET_RECIPE.mean, IMAGENET_RECIPE.std) == (tuple(transforms.mean), tuple(transforms.std))
    assert IMAGENET_URL == weights.url


def test_weights_are_read_once_per_process_and_each_load_gets_its_own_module(checkpoint, monkeypatch):
    from inference import checkpoint as checkpoint_module
    from inference.weights import clear_weights_cache

    path, _ = checkpoint
    clear_weights_cache()
    reads = []
    real = checkpoint_module.read_checkpoint
    monkeypatch.setattr(checkpoint_module, "read_checkpoint", lambda *a: reads.append(a) or real(*a))
    first, second = load_model(str(path)), load_model(str(path))
    assert len(reads) == 1 and first.module is not second.module
    with torch.no_grad():
        first.module.fc.weight.zero_()  # a caller changing its module leaves the others alone
    assert second.module.fc.weight.abs().sum() > 0 and load_model(str(path)).module.fc.weight.abs().sum() > 0


def test_the_model_module_does_not_import_torchvision():
    import subprocess
    import sys

    code = ("import sys, numpy, inference; m = inference.load_model('random'); "
            "inference.Predictor(m, inference.choose_device(), 'fp32', 5, embeddings='float16')(numpy.zeros((1, 224, 224, 3), numpy.uint8)); "
            "print('torchvision' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_checkpoint_replaced_after_the_driver_described_it_is_refused(checkpoint, tmp_path):
    from inference import describe_model
    from inference.weights import clear_weights_cache

    path, _ = checkpoint
    moving = tmp_path / "moving.pt"
    moving.write_bytes(path.read_bytes())
    spec = describe_model(str(moving))
    retrained = torch.load(path, weights_only=True)
    retrained["fc.bias"] += 1
    torch.save(retrained, moving)
    clear_weights_cache()  # as in a worker's process: it reads the file afresh
    with pytest.raises(WeightsError, match="moving.pt changed after the job checked it"):
        load_model(spec)


def test_loading_a_checkpoint_imports_no_compiler(checkpoint):
    """Checking and loading weights builds the network on the meta device: no draw of initial weights, so
    torch._dynamo and sympy (about 1 s of every predictor's start) are never imported without --compile."""
    code = ("import sys; from inference import load_model; load_model(sys.argv[1]); "
            "assert 'torch._dynamo' not in sys.modules and 'sympy' not in sys.modules, 'compiler imported'")
    done = subprocess.run([sys.executable, "-c", code, str(checkpoint[0])], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
