"""The driver's plan (job.execution): one place decides decode, batch size, precision, compile, the model and the outputs."""

from __future__ import annotations

import pytest

from inference.compile import COMPILE_BREAK_EVEN_IMAGES
from job.config import JobConfig
from job.errors import JobError
from inference import WeightsError
from job.execution import Capabilities, Devices, Execution, decide, model_for
from preprocess.recipe import Recipe

H100, T4, CPU = Devices("cuda", "H100"), Devices("cuda", "Tesla T4"), Devices("cpu")
ALL = Capabilities()


def config(**options) -> JobConfig:
    return JobConfig(**{"input": "in", "output": "out", "weights": "random", **options})


def decided(config: JobConfig, capabilities: Capabilities, devices: Devices, images: int, **options) -> Execution:
    """``decide`` with the model ``config`` names, described as the driver does."""
    return decide(config, capabilities, devices, images, model=model_for(config), **options)


def test_defaults_with_a_gpu_are_what_a_gpu_has_run():
    plan = decided(config(), ALL, H100, images=10**7)
    assert (plan.device, plan.decode, plan.compile, plan.batch_size, plan.precision) == ("cuda", "cpu", False, 256, "bf16")
    assert plan.reasons["decode"] == "the default" and plan.reasons["precision"] == "the default on H100"


def test_defaults_on_cpu_and_on_a_gpu_without_bf16():
    assert (decided(config(), ALL, CPU, 10).batch_size, decided(config(), ALL, CPU, 10).precision) == (32, "fp32")
    assert decided(config(), ALL, T4, 10).precision == "fp16"
    assert decided(config(), ALL, Devices("cuda"), 10).precision == "fp16"  # a GPU of unknown type: what every GPU runs


def test_the_users_options_win_and_say_so():
    plan = decided(config(decode="auto", batch_size=8, precision="fp32", compile="on", topk=3, cpu_resize="exact"), ALL, H100, 10)
    assert (plan.decode, plan.batch_size, plan.precision, plan.compile, plan.auto_adapts, plan.topk) == ("auto", 8, "fp32", True, True, 3)
    assert plan.cpu_resize == "exact"
    assert plan.reasons == {"decode": "--decode", "batch_size": "--batch-size", "precision": "--precision", "compile": "--compile",
                            "topk": "--topk", "cpu_resize": "--cpu-resize"}


def test_a_fast_path_without_its_libraries_is_refused_in_one_line_naming_exact(monkeypatch):
    from preprocess import batch

    monkeypatch.setitem(batch.FAST_LIBRARIES, "no_such_module_here", "no-such-package")
    with pytest.raises(JobError, match="--cpu-resize fast needs no-such-package .*pip install no-such-package, or pass "
                                       "--cpu-resize exact"):
        decided(config(), ALL, CPU, 10)
    assert decided(config(cpu_resize="exact"), ALL, CPU, 10).cpu_resize == "exact"


def test_the_cpu_resizes_fast_unless_told_and_the_plan_carries_it_to_sagemaker():
    plan = decided(config(), ALL, CPU, 10)
    assert (plan.cpu_resize, plan.reasons["cpu_resize"]) == ("fast", "the default")
    assert Execution.from_dict(plan.to_dict()).cpu_resize == "fast"


def test_compile_auto_is_the_size_rule():
    assert decided(config(compile="auto"), ALL, H100, COMPILE_BREAK_EVEN_IMAGES).compile
    assert not decided(config(compile="auto"), ALL, H100, COMPILE_BREAK_EVEN_IMAGES - 1).compile
    assert not decided(config(compile="auto"), ALL, CPU, 10**9).compile


def test_what_the_engine_or_device_cannot_run_is_refused_before_any_work():
    cpu_only = Capabilities(decodes=("cpu",), adapts_auto=False)
    with pytest.raises(JobError, match="--decode gpu: sagemaker decodes with cpu only; pass --decode cpu"):
        decided(config(decode="gpu"), cpu_only, H100, 10, engine="sagemaker")
    with pytest.raises(JobError, match="--precision fp16 needs a GPU"):
        decided(config(precision="fp16"), ALL, CPU, 10)
    with pytest.raises(JobError, match="--precision bf16: Tesla T4 has no bf16; use fp16"):
        decided(config(precision="bf16"), ALL, T4, 10)


def test_auto_adapts_only_where_the_engine_carries_the_feedback():
    assert not decided(config(decode="auto"), Capabilities(adapts_auto=False), H100, 10).auto_adapts
    assert not decided(config(decode="gpu"), ALL, H100, 10).auto_adapts


def test_the_plan_survives_its_json_form(tmp_path):
    (tmp_path / "names.txt").write_text("\n".join(f"class {i}" for i in range(1000)))
    plan = decided(config(decode="gpu", resize=256, labels=str(tmp_path / "names.txt"), embeddings="with"), ALL, H100, 10)
    record = plan.to_dict()
    back = Execution.from_dict(record)
    assert back == plan and back.recipe == Recipe(resize=256, crop=224) and back.model.class_names[7] == "class 7"
    assert record["recipe"] == record["model"]["recipe"] == Recipe(resize=256, crop=224).to_dict()  # one recipe: the model's
    assert (record["embeddings"], record["predictions"], record["model"]["names_source"]) == \
        ("float32", True, f"labels {tmp_path / 'names.txt'}")


def test_the_recipe_options_change_only_what_they_name():
    plan = decided(config(crop=200, mean=(0.5, 0.5, 0.5)), ALL, CPU, 10)
    assert plan.recipe == Recipe(resize=232, crop=200, mean=(0.5, 0.5, 0.5)) and plan.model.recipe is plan.recipe


def test_outputs_follow_the_embeddings_option():
    assert (decided(config(), ALL, CPU, 1).predictions, decided(config(), ALL, CPU, 1).embeddings) == (True, None)
    both = decided(config(embeddings="with", embedding_dtype="float16"), ALL, CPU, 1)
    assert (both.predictions, both.embeddings) == (True, "float16")
    alone = decided(config(embeddings="only"), ALL, CPU, 1)
    assert (alone.predictions, alone.embeddings) == (False, "float32")


def test_topk_defaults_to_five_or_the_class_count_and_an_explicit_one_above_it_is_refused(tmp_path):
    from tests.common.checkpoints import write_checkpoint
    import torch

    three = write_checkpoint(tmp_path / "three.pt", {**_resnet_state(), "fc.weight": torch.zeros(3, 2048), "fc.bias": torch.zeros(3)})
    assert decided(config(), ALL, CPU, 1).topk == 5
    assert decided(config(weights=str(three)), ALL, CPU, 1).topk == 3  # lowered: the default fits any head
    assert decided(config(weights=str(three), topk=2), ALL, CPU, 1).topk == 2
    with pytest.raises(JobError, match=r"--topk 5: the model has 3 classes; pass --topk 3 or fewer, or leave --topk out \(then 3\)"):
        model_for(config(weights=str(three), topk=5))
    assert model_for(config(weights=str(three), topk=5, embeddings="only")).num_classes == 3  # no top-k to write


def test_a_one_logit_head_has_two_classes_so_topk_defaults_to_two(tmp_path):
    from tests.common.checkpoints import write_checkpoint
    import torch

    binary = write_checkpoint(tmp_path / "binary.pt", {**_resnet_state(), "fc.weight": torch.zeros(1, 2048), "fc.bias": torch.zeros(1)})
    plan = decided(config(weights=str(binary)), ALL, CPU, 1)
    assert (plan.model.num_classes, plan.model.activation, plan.topk) == (2, "sigmoid", 2)
    with pytest.raises(JobError, match=r"--topk 3: the model has 2 classes; pass --topk 2 or fewer"):
        model_for(config(weights=str(binary), topk=3))


def test_a_recipe_that_does_not_fit_the_checkpoints_is_refused_by_the_model():
    with pytest.raises(WeightsError, match="crop <= resize"):
        model_for(config(crop=300))  # fine alone, but ResNet50's default resize is 232


def _resnet_state() -> dict:
    from inference import load_model

    return load_model("random").module.state_dict()
