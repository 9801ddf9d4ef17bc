"""The architecture table agrees with torchvision, and each family's body/head split is exact."""

from __future__ import annotations

import pytest
import torch
from torchvision.models import get_model, get_model_weights

from inference.archs import ARCHS
from inference.build import build
from inference.features import FeaturesAndLogits

CPU = torch.device("cpu")


@pytest.mark.parametrize("name", list(ARCHS))
def test_each_entry_is_torchvisions_recipe_head_and_embedding_size(name):
    arch = ARCHS[name]
    transforms = get_model_weights(name).DEFAULT.transforms()
    assert transforms.interpolation.value == arch.recipe.interpolation and transforms.antialias  # the kernel preprocess resizes with
    assert (arch.recipe.resize, arch.recipe.crop) == (transforms.resize_size[0], transforms.crop_size[0])
    assert (arch.recipe.mean, arch.recipe.std) == (tuple(transforms.mean), tuple(transforms.std))
    with torch.device("meta"):
        module = get_model(name, weights=None, num_classes=7)
    head = module.get_submodule(arch.head)
    assert isinstance(head, torch.nn.Linear) and (head.in_features, head.out_features) == (arch.embedding_dim, 7)
    assert arch.input_size == getattr(module, "image_size", None)


# One of each family, at the smallest input each takes; ResNet50 is tested in test_predictor.py.
@pytest.mark.parametrize("name, size", [("resnet18", 64), ("efficientnet_v2_s", 64), ("convnext_tiny", 64), ("vit_b_32", 224)])
def test_the_head_applied_to_the_embedding_is_the_whole_network(name, size):
    torch.manual_seed(0)
    module = build(ARCHS[name], 5).eval()
    x = torch.randn(2, 3, size, size)
    with torch.inference_mode():
        features, logits = FeaturesAndLogits(module, ARCHS[name].head)(x)
        whole = module(x)
    assert features.shape == (2, ARCHS[name].embedding_dim)
    torch.testing.assert_close(logits, whole)
    assert isinstance(module.get_submodule(ARCHS[name].head), torch.nn.Linear)  # the original keeps its head


def test_another_architectures_checkpoint_runs_through_the_predictor(tmp_path):
    import numpy as np
    from torchvision.models import resnet18

    from inference import Predictor, describe_model, load_model

    torch.manual_seed(1)
    theirs = resnet18(num_classes=3).eval()
    torch.save({"model": theirs.state_dict(), "classes": ["a", "b", "c"]}, tmp_path / "r18.pt")
    spec = describe_model(str(tmp_path / "r18.pt"), arch="resnet18")
    assert (spec.num_classes, spec.embedding_dim, spec.class_names, spec.recipe.resize) == (3, 512, ("a", "b", "c"), 256)
    pixels = np.random.default_rng(0).integers(0, 256, (2, 224, 224, 3), dtype=np.uint8)
    out = Predictor(load_model(spec), CPU, "fp32", 3, embeddings="float32")(pixels)
    mean, std = torch.tensor(spec.recipe.mean).view(1, 3, 1, 1), torch.tensor(spec.recipe.std).view(1, 3, 1, 1)
    with torch.inference_mode():
        reference = theirs((torch.from_numpy(pixels).permute(0, 3, 1, 2) / 255 - mean) / std).softmax(1)
    np.testing.assert_array_equal(out.label, reference.argmax(1).numpy())
    np.testing.assert_allclose(out.topk_scores.sum(1), 1, rtol=1e-5)
    assert out.embeddings.shape == (2, 512)
