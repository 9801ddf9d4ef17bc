"""A model call that hangs: past --batch-timeout it is retried once, then its rows become error rows and the night goes on.

The hang is real: a predictor whose model sleeps in its forward on a batch holding a flat image
(``tests.common.ray_standins.PredictorThatHangs``), on a real local Ray.
"""

from __future__ import annotations

import dataclasses
import io
import time

import pytest
from PIL import Image

from job import driver
from runners import ray_job
from storage import resolve
from tests.common.contract import read_output
from job.sample.synthetic import synthetic_rows, write_dataset
from tests.common.ray_standins import PredictorThatHangs

pytestmark = pytest.mark.usefixtures("local_ray")  # one local Ray for the module (tests/conftest.py)
# A healthy call of one small image takes well under a second, and over 2 s on a machine whose busy loops starve
# Ray's workers (they run at nice 15): 10 s keeps the healthy rows healthy there and the hung one still times out.
TIMEOUT_S = 10


def flat_png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 48), (90, 120, 150)).save(out, format="PNG")
    return out.getvalue()


def test_a_hanging_batch_becomes_error_rows_and_the_run_goes_on(tmp_path, capsys):
    rows = [*synthetic_rows(3, "jpeg", (96, 72), seed=2), ("hangs", flat_png())]
    write_dataset(resolve(str(tmp_path / "in")), iter(rows), 2)
    engine = dataclasses.replace(ray_job.ENGINE, execute=lambda job, session, args: ray_job.run_on_ray(
        job, session, args, PredictorThatHangs))
    began = time.monotonic()
    manifest = driver.main(engine, ["--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--weights", "random",
                                    "--batch-size", "1", "--batch-timeout", str(TIMEOUT_S)])
    # Two tries of TIMEOUT_S each, not the model's sleep: the run did not wait for the hung call.
    assert time.monotonic() - began < PredictorThatHangs.HANG_S
    out, written = read_output(str(tmp_path / "out"))
    by_id = {row["id"]: row for row in out}
    assert sorted(by_id) == sorted(i for i, _ in rows) and len(out) == len(rows)
    assert by_id["hangs"]["error"] == f"model call timed out: over --batch-timeout {TIMEOUT_S} s, twice"
    assert by_id["hangs"]["label"] is None
    assert all(by_id[i]["error"] is None and by_id[i]["label"] is not None for i, _ in rows[:3])
    assert written["counts"] == {"rows_in": 4, "rows_out": 4, "predicted": 3, "errored": 1, "withheld": 0}
    assert written["config"]["batch_timeout"] == TIMEOUT_S
    assert f"model call timed out: over --batch-timeout {TIMEOUT_S} s, twice" in capsys.readouterr().out


@pytest.mark.slow  # CI: the night's plan of rows that timed out (tests/unit/test_night.py) and the hanging batch above
def test_rows_that_timed_out_are_run_again_by_the_next_incremental_night(tmp_path):
    """A timeout is transient: the next --incremental runs the file again (beside the part readers read), the rest kept."""
    rows = [*synthetic_rows(3, "jpeg", (96, 72), seed=2), ("hangs", flat_png())]
    write_dataset(resolve(str(tmp_path / "in")), iter(rows), 2)
    args = ["--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--weights", "random", "--batch-size", "1",
            "--incremental"]
    hanging = dataclasses.replace(ray_job.ENGINE, execute=lambda job, session, args: ray_job.run_on_ray(
        job, session, args, PredictorThatHangs))
    first = driver.main(hanging, [*args, "--batch-timeout", str(TIMEOUT_S)])
    assert first["counts"]["errored"] == 1
    night = driver.main(ray_job.ENGINE, args)
    out, written = read_output(str(tmp_path / "out"))
    assert sorted(row["id"] for row in out) == sorted(i for i, _ in rows)
    assert all(row["error"] is None for row in out) and written["counts"]["errored"] == 0
    assert (night["input_files"]["run"], night["input_files"]["resumed"]) == (1, 1)
    assert night["run_id"] != first["run_id"] and driver.main(ray_job.ENGINE, args)["run_id"] == night["run_id"]
