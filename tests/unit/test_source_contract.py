"""The model source contract (``inference.source``): a source is one row of ``inference.sources.SOURCES``.

A fifth source, written here as a team would add its own registry, is parsed, given its weights, described (the
options over its recipe, --labels over its names, its head measured by running it), recorded with its kind and
loaded, with nothing else changed; a spec whose kind no row has is refused in one line."""

from __future__ import annotations

import dataclasses
from functools import partial

import pytest
import torch
from torch import nn

from inference import ModelSpec, WeightsError, describe_model, load_model
from inference.model_recipe import RecipeDraft
from inference.probe import probe
from inference.source import Found, Opened, Source, WeightsRule, name_after
from inference.sources import SOURCES, parse_model, weights_for_source
from inference.weights import OWN_WEIGHTS, RANDOM_WEIGHTS
from job.config import JobConfig
from preprocess.recipe import Recipe

NAMES = ("cat", "dog", "owl")
HEAD = "3"  # the Sequential's last step: its Linear


def _network() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 4), nn.ReLU(), nn.Linear(4, len(NAMES))).eval()


def _read(name: str, weights: str, s3_endpoint_url: str | None) -> Found:
    card = f"tiny:{name}'s card"
    return Found(f"tiny:{name}", "TinyNet", RecipeDraft.whole(Recipe(resize=8, crop=8), card),
                 partial(probe, _network(), HEAD, f"tiny:{name}"), names=NAMES, names_source=card, location=name)


TINY = Source(kind="tiny", forms=("tiny:NAME",), prefix="tiny:",
              parse=partial(name_after, prefix="tiny:", form="tiny:NAME"),
              weights=WeightsRule(OWN_WEIGHTS, (OWN_WEIGHTS, RANDOM_WEIGHTS)), read=_read,
              open=lambda spec, s3_endpoint_url: Opened(_network(), HEAD), folder=lambda spec, s3_endpoint_url: None)


@pytest.fixture
def tiny(monkeypatch):
    monkeypatch.setitem(SOURCES, TINY.kind, TINY)


def test_a_fifth_source_is_one_row_of_the_table(tiny, tmp_path):
    ref = parse_model("tiny:pets")
    assert (ref.kind, ref.name, ref.given, ref.arch) == ("tiny", "pets", "tiny:pets", None)
    config = JobConfig(input=None, output=None, model="tiny:pets")
    assert (config.model, config.arch, config.weights) == ("tiny:pets", None, OWN_WEIGHTS)  # its rule's default
    spec = describe_model(OWN_WEIGHTS, model="tiny:pets", recipe_overrides={"mean": (0.5,) * 3})
    assert (spec.kind, spec.source, spec.arch, spec.num_classes, spec.embedding_dim) == \
        ("tiny", "tiny:pets", "TinyNet", 3, 4)
    assert (spec.class_names, spec.names_source) == (NAMES, "tiny:pets's card")
    assert spec.recipe == Recipe(resize=8, crop=8, mean=(0.5,) * 3)
    assert spec.recipe_source == "tiny:pets's card; mean from the options"
    assert ModelSpec.from_dict(spec.to_dict()) == spec and spec.to_dict()["kind"] == "tiny"
    loaded = load_model(spec)
    assert loaded.head == HEAD and loaded.module(torch.zeros(2, 3, 8, 8)).shape == (2, len(NAMES))
    (tmp_path / "names.txt").write_text("a\nb\nc\n")
    labelled = describe_model(OWN_WEIGHTS, model="tiny:pets", labels=str(tmp_path / "names.txt"))
    assert labelled.class_names == ("a", "b", "c")  # --labels win over the model's own, as for every source


def test_a_fifth_sources_refusals_are_the_contracts(tiny):
    with pytest.raises(WeightsError, match="--model tiny:: tiny:NAME names nothing after 'tiny:'"):
        parse_model("tiny:")
    with pytest.raises(WeightsError, match="--weights imagenet: --model tiny:pets holds its own weights"):
        weights_for_source(parse_model("tiny:pets"), "imagenet", sample=False)
    with pytest.raises(WeightsError, match=r"the recipe options: the recipe needs crop <= resize"):
        describe_model(OWN_WEIGHTS, model="tiny:pets", recipe_overrides={"crop": 16})
    with pytest.raises(WeightsError, match="tiny:pets does not run on 16x16 images"):
        describe_model(OWN_WEIGHTS, model="tiny:pets", recipe_overrides={"resize": 16, "crop": 16})
    with pytest.raises(WeightsError, match="not a model source; pass a torchvision name .*, tiny:NAME$"):
        parse_model("onnx:pets")


def test_every_spec_records_its_sources_kind_and_a_kind_no_row_has_is_refused():
    spec = describe_model("random")
    assert (spec.kind, spec.to_dict()["kind"]) == ("torchvision", "torchvision")
    with pytest.raises(WeightsError, match="source kind 'onnx', which is none of torchvision, timm, hf, mlflow"):
        load_model(dataclasses.replace(spec, kind="onnx"))
