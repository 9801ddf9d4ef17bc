"""runners.capacity on this machine: a calibration measured with the job's own stages, kept and found again; a question
no measured rate answers is refused in one line."""

from __future__ import annotations

import json

import pytest

from job.cli import run_main
from job.costs import calibration
from runners import capacity

# A tiny model input (32 px): the calibration's mechanics, not the machine, are under test.
TINY = ["--weights", "random", "--resize", "40", "--crop", "32", "--calibrate-seconds", "0.2"]


def test_a_calibration_on_this_machine_is_measured_kept_and_reused(tmp_path, capsys):
    kept = tmp_path / "calibrations.json"
    measured = capacity.main(["--images", "2000", "--engine", "local", "--calibrate", "--calibration", str(kept), *TINY])
    err = capsys.readouterr().err
    assert f"calibration kept in {kept}" in err and "48 images of the built-in sample" in err
    assert measured["rates"]["model"]["kind"] == measured["rates"]["cpu_per_vcpu"]["kind"] == "calibration"
    (entry,) = json.loads(kept.read_text())["calibrations"]
    assert entry["device"] == "cpu" and entry["crop"] == 32 and entry["decode_per_core"] > 0 and entry["startup_seconds"] > 0
    model, decode = entry["model_per_device"], 1 / (1 / entry["decode_per_core"] + 0.21e-3)  # + local's own 0.21 ms
    cores = measured["vcpus_per_machine"]
    assert measured["seconds"] == round(entry["startup_seconds"] + 2000 * (1 / (decode * cores) + 1 / model), 1)  # its answer, to 0.1 s

    again = capacity.main(["--images", "2000", "--engine", "local", "--calibration", str(kept), "--json", *TINY])
    assert again["seconds"] == measured["seconds"] and json.loads(capsys.readouterr().out)["seconds"] == again["seconds"]
    assert again["rates"]["model"]["source"].startswith(f"a calibration on {cores} x ")
    recorded = calibration.recorded(str(kept), device="cpu", model="resnet50", crop=32, precision="fp32",
                                    hardware=entry["hardware"])
    assert recorded is not None and recorded.model_per_device == model


@pytest.mark.parametrize("argv, line", [
    (["--images", "10", "--engine", "ray", "--instance", "g5.xlarge"], "on A10G GPUs with ray: not measured"),
    (["--images", "10", "--engine", "ray", "--gpu", "H100", "--model", "resnet18"], "resnet18 at 224 px, bf16, on H100 GPUs"),
    (["--engine", "ray", "--gpu", "H100"], "how many images? pass --images N, or --input PREFIX"),
    (["--images", "10", "--instance", "m5.4xlarge"], "--instance m5.4xlarge has no GPU"),
    (["--images", "10", "--engine", "spark", "--instance", "p5.48xlarge", "--vcpus-per-gpu", "40"],
     "spark decodes on the GPU nodes' own vCPUs (24 a GPU on p5.48xlarge)"),
    (["--images", "10", "--gpu", "H100", "--deadline", "10s"], "is within the start-up alone"),
    (["--images", "10", "--gpu", "H100", "--calibrate"], "--calibrate measures this machine"),
])
def test_a_question_no_measured_rate_answers_is_one_line(argv, line, tmp_path, capsys):
    assert run_main(capacity.main, [*argv, "--calibration", str(tmp_path / "none.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and line in err, err


def test_the_rates_table_lists_every_figure_with_its_source(capsys):
    figures = capacity.main(["--rates-table"])["figures"]
    out = capsys.readouterr().out.splitlines()
    assert len(out) == len(figures) and all("BENCHMARKS.md" in line or "DESIGN.md" in line for line in out)
