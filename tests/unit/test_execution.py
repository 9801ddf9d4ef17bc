"""The driver's plan (job.execution): one place decides decode, batch size, precision and compile."""

from __future__ import annotations

import pytest

from inference.compile import COMPILE_BREAK_EVEN_IMAGES
from job.config import JobConfig
from job.errors import JobError
from job.execution import Capabilities, Devices, Execution, decide
from preprocess.recipe import Recipe

H100, T4, CPU = Devices("cuda", "H100"), Devices("cuda", "Tesla T4"), Devices("cpu")
ALL = Capabilities()


def config(**options) -> JobConfig:
    return JobConfig(input="in", output="out", weights="random", **options)


def test_defaults_with_a_gpu_are_what_a_gpu_has_run():
    plan = decide(config(), ALL, H100, images=10**7)
    assert (plan.device, plan.decode, plan.compile, plan.batch_size, plan.precision) == ("cuda", "cpu", False, 256, "bf16")
    assert plan.reasons["decode"] == "the default" and plan.reasons["precision"] == "the default on H100"


def test_defaults_on_cpu_and_on_a_gpu_without_bf16():
    assert (decide(config(), ALL, CPU, 10).batch_size, decide(config(), ALL, CPU, 10).precision) == (32, "fp32")
    assert decide(config(), ALL, T4, 10).precision == "fp16"
    assert decide(config(), ALL, Devices("cuda"), 10).precision == "fp16"  # a GPU of unknown type: what every GPU runs


def test_the_users_options_win_and_say_so():
    plan = decide(config(decode="auto", batch_size=8, precision="fp32", compile="on"), ALL, H100, 10)
    assert (plan.decode, plan.batch_size, plan.precision, plan.compile, plan.auto_adapts) == ("auto", 8, "fp32", True, True)
    assert plan.reasons == {"decode": "--decode", "batch_size": "--batch-size", "precision": "--precision", "compile": "--compile"}


def test_compile_auto_is_the_size_rule():
    assert decide(config(compile="auto"), ALL, H100, COMPILE_BREAK_EVEN_IMAGES).compile
    assert not decide(config(compile="auto"), ALL, H100, COMPILE_BREAK_EVEN_IMAGES - 1).compile
    assert not decide(config(compile="auto"), ALL, CPU, 10**9).compile


def test_what_the_engine_or_device_cannot_run_is_refused_before_any_work():
    cpu_only = Capabilities(decodes=("cpu",), adapts_auto=False)
    with pytest.raises(JobError, match="--decode gpu: sagemaker decodes with cpu only; pass --decode cpu"):
        decide(config(decode="gpu"), cpu_only, H100, 10, engine="sagemaker")
    with pytest.raises(JobError, match="--precision fp16 needs a GPU"):
        decide(config(precision="fp16"), ALL, CPU, 10)
    with pytest.raises(JobError, match="--precision bf16: Tesla T4 has no bf16; use fp16"):
        decide(config(precision="bf16"), ALL, T4, 10)


def test_auto_adapts_only_where_the_engine_carries_the_feedback():
    assert not decide(config(decode="auto"), Capabilities(adapts_auto=False), H100, 10).auto_adapts
    assert not decide(config(decode="gpu"), ALL, H100, 10).auto_adapts


def test_the_plan_survives_its_json_form():
    plan = decide(config(decode="gpu"), ALL, H100, 10, recipe=Recipe(resize=256, crop=224))
    back = Execution.from_dict(plan.to_dict())
    assert back == plan and back.recipe == Recipe(resize=256, crop=224)
