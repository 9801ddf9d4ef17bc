"""job.costs: a measured rate and its source, the shipped rates table, the capacity model, the layouts and the answer."""

from __future__ import annotations

import math

import pytest

from job.config import parse_duration
from job.costs import shipped
from job.costs.answer import Question, answer
from job.costs.layout import CPU_DECODERS, DRIVER, GPU_WORKERS, HEAD, layout, vcpus_per_gpu
from job.costs.prices import Instance, Price, instance
from job.costs.rates import Rate, UnitRates
from job.costs.sizing import (CPU_SIDE, MODEL, Cluster, estimate, unit_rate, units_for_deadline,
                              vcpus_to_feed)
from job.errors import JobError

H100 = shipped.gpu_rates("H100", "ray", "resnet50", 224, "bf16")


def rates(model: float, cpu: float, startup: float = 10.0, measured: int | None = None) -> UnitRates:
    return UnitRates("T", Rate(model, 0.0, "model figure", "calibration"), Rate(cpu, 0.0, "cpu figure", "calibration"),
                     startup, "start-up figure", measured_vcpus=measured)


def test_a_rate_is_its_start_up_then_the_images_at_it():
    rate = Rate(100.0, 5.0, "a calibration on this machine (2026-12-07)", "calibration")
    assert rate.seconds_for(1000) == 15.0
    with pytest.raises(JobError, match="images/s > 0"):
        Rate(0.0, 0.0, "nothing measured", "shipped")
    with pytest.raises(JobError, match="kind is one of history, calibration, shipped"):
        Rate(1.0, 0.0, "a guess", "guess")


def test_the_shipped_h100_rates_are_benchmarks_figures_and_say_so():
    assert H100.model.images_per_sec == 12366.8 and H100.model.kind == "shipped"
    assert H100.cpu.images_per_sec == pytest.approx(5643.56 / 16) and H100.measured_vcpus == 16
    assert H100.startup_seconds == 16.23
    for source in (H100.model.source, H100.cpu.source, H100.startup_source):
        assert source.startswith("shipped rates: ") and "2026-11-26" in source and "BENCHMARKS.md" in source


def test_an_engine_never_run_on_a_gpu_gets_the_stage_figures_and_is_told_so():
    spark = shipped.gpu_rates("H100", "spark", "resnet50", 224, "bf16")
    assert "spark's whole job with H100 GPUs: not measured" in spark.cpu.source
    assert spark.startup_seconds == 0 and "not measured" in spark.startup_source
    assert spark.cpu.images_per_sec == pytest.approx(1 / (1 / 270 + 0.09e-3))


@pytest.mark.parametrize("gpu, model, crop, precision", [("A10G", "resnet50", 224, "bf16"), ("H100", "resnet18", 224, "bf16"),
                                                          ("H100", "resnet50", 384, "bf16"), ("H100", "resnet50", 224, "fp16")])
def test_what_the_table_does_not_list_is_not_measured(gpu, model, crop, precision):
    assert shipped.gpu_rates(gpu, "ray", model, crop, precision) is None


def test_every_shipped_figure_names_its_date_hardware_software_source_and_command():
    rows = shipped.figures()
    assert {r["what"] for r in rows} == {"model", "job", "decode", "overhead"}
    assert all(r["date"].startswith("2026-") and r["hardware"] and r["software"] and r["command"] for r in rows)
    assert len(shipped.table_lines()) == len(rows)


def test_a_gpu_does_the_slower_of_its_model_and_the_cpus_feeding_it():
    assert unit_rate(rates(1000.0, 50.0), 16, gpu=True) == (800.0, CPU_SIDE)
    assert unit_rate(rates(1000.0, 100.0), 16, gpu=True) == (1000.0, MODEL)
    assert vcpus_to_feed(rates(1000.0, 50.0)) == 20


def test_a_cpu_machine_decodes_and_runs_the_model_on_the_same_cores():
    rate, limit = unit_rate(rates(8.0, 400.0), 2, gpu=False)
    assert rate == pytest.approx(1 / (1 / 800 + 1 / 8)) and limit == MODEL


def test_a_deadline_takes_the_fewest_gpus_that_meet_it():
    r = rates(1000.0, 100.0, startup=100.0)
    units = units_for_deadline(3_600_000, 3700.0, r, 16, gpu=True)  # 3,600 s of work at 1,000 images/s a GPU
    assert units == 1 and units_for_deadline(3_600_001, 3700.0, r, 16, gpu=True) == 2
    assert estimate(3_600_000, r, Cluster(1, 16, True)).seconds == 3700.0
    with pytest.raises(JobError, match="within the start-up alone"):
        units_for_deadline(10, 50.0, r, 16, gpu=True)


@pytest.mark.parametrize("text, seconds", [("6h", 21600), ("90m", 5400), ("1h30m", 5400), ("3600s", 3600), ("45", 45)])
def test_deadlines_read_as_people_write_them(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["soon", "6x", "0h", ""])
def test_a_bad_deadline_names_the_forms(text):
    with pytest.raises(ValueError, match="such as 3h"):
        parse_duration(text)


def test_instances_come_from_the_price_table_and_an_unlisted_price_is_none():
    p5 = instance("p5.48xlarge")
    assert (p5.vcpus, p5.gpus, p5.gpu, p5.price) == (192, 8, "H100", None)
    assert instance("g5.xlarge").price.usd_per_hour == 1.006
    with pytest.raises(JobError, match="--instance x9.huge: not in"):
        instance("x9.huge")


GPU4 = Instance("gpu4", 48, 4, "T", Price(4.0, "test"))
CPU16 = Instance("cpu16", 16, 0, None, Price(0.5, "test"))
HEAD8 = Instance("head8", 8, 0, None, Price(0.25, "test"))


def test_ray_adds_cpu_only_nodes_for_the_decoders_its_gpu_nodes_cannot_hold():
    laid = layout("ray", Cluster(8, 36, True), GPU4, CPU16, HEAD8)  # 288 vCPU: 96 on two GPU nodes, 192 on CPU nodes
    assert (laid.count(GPU_WORKERS), laid.count(CPU_DECODERS), laid.count(HEAD)) == (2, 12, 1)
    assert laid.usd_per_hour == 2 * 4.0 + 12 * 0.5 + 0.25 and laid.dollars(3600) == 14.25


def test_the_vcpus_a_gpu_are_its_instances_and_ray_adds_up_to_what_was_measured():
    assert vcpus_per_gpu("spark", H100, GPU4, None) == 12 and vcpus_per_gpu("ray", H100, GPU4, None) == 16
    assert vcpus_per_gpu("ray", H100, None, None) == 16  # a GPU kind alone: as the rates were measured
    assert vcpus_per_gpu("ray", rates(1000.0, 50.0), None, None) == 20  # measured apart: what feeds the model
    assert vcpus_per_gpu("local", H100, None, None, machine_vcpus=8) == 8  # this machine's GPU: its vCPUs
    assert vcpus_per_gpu("ray", H100, GPU4, 40) == 40
    with pytest.raises(JobError, match="spark decodes on the GPU nodes' own vCPUs"):
        vcpus_per_gpu("spark", H100, GPU4, 40)


def test_spark_runs_a_driver_node_and_local_one_machine():
    assert layout("spark", Cluster(5, 12, True), GPU4).count(DRIVER) == 1
    assert layout("spark", Cluster(5, 12, True), GPU4).count(GPU_WORKERS) == 2
    with pytest.raises(JobError, match="local engine runs on one machine"):
        layout("local", Cluster(2, 12, True), GPU4)


def test_an_unpriced_instance_makes_the_total_no_price_never_a_guess():
    unpriced = Instance("dark", 48, 4, "T", None)
    assert layout("sagemaker", Cluster(3, 48, True), unpriced).dollars(3600) is None


def test_a_deadline_answer_chooses_h100_gpus_from_the_shipped_rates_and_cites_them():
    question = Question(500_000_000, 6 * 3600, "ray", "H100", 16)
    found = answer(question, H100)
    per_gpu = 5643.56
    assert found.estimate.cluster.units == math.ceil(500_000_000 / ((6 * 3600 - 16.23) * per_gpu)) == 5
    record = found.to_dict()
    assert record["gpus"] == 5 and record["vcpus_per_gpu"] == 16 and record["fits"] is True
    assert record["seconds"] == pytest.approx(16.23 + 500_000_000 / (5 * per_gpu), abs=0.1)
    text = "\n".join(found.lines())
    assert "shipped rates: ResNet50 eager bf16 batch 256 alone on one H100, 2026-11-26 (BENCHMARKS.md" in text
    assert "the CPU side limits (the GPU at 46% of the model alone)" in text and "no price" in text
    assert "36 vCPU a GPU would feed the model alone" in text


def test_the_local_engine_past_the_deadline_says_it_does_not_fit():
    question = Question(10_000, 60.0, "local", "cpu", 2, max_units=1)
    found = answer(question, rates(8.0, 400.0, startup=5.0))
    assert found.fits is False and found.estimate.cluster.units == 1
    assert any("--engine ray or spark" in note for note in found.notes)
