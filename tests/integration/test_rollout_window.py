"""--rollout-time on the local engine: a new model rolled out as many files a night as fit in a window, at the rate the
table's own nights measured; the rollout ends with every id once and the table as a fresh run of the new model writes
it. The slow test's table takes minutes to score again whole, and each night ends within 1.5x its window."""

from __future__ import annotations

import pytest

from job.sample.synthetic import synthetic_rows, write_dataset
from runners import local_job
from storage import resolve
from tests.integration.checks_scenarios import job_args
from tests.integration.incremental_scenarios import write_night
from tests.integration.rollout_scenarios import fresh, holds_each_files_rows_of_one_model, read_table
from tests.integration.promises_scenarios import A, B

LOCAL = ("--workers", "0")


def rolled_out_in_windows(root: str, files: int, window: str, model_a=A, model_b=B, rows: int = 0) -> list[dict]:
    """Night 1 with A, then nights with B and --rollout-time ``window`` until the table is B's; the nights' manifests.
    ``rows``: photo-sized images a file (500x375), else ``write_night``'s tiny ones."""
    source, out = f"{root}/in", f"{root}/out"
    if rows:
        write_dataset(resolve(source), iter(synthetic_rows(files * rows, "jpeg", (500, 375), seed=1)), rows)
    else:
        write_night(source, None, 0, files)
    args = [*job_args(source, out, None, "--incremental", "--table-format", "delta"), *LOCAL]
    local_job.main([*args, *model_a])
    nights = []
    while not nights or nights[-1]["rollout"]["left"]["files"]:
        nights.append(local_job.main([*args, *model_b, "--rollout-time", window]))
        assert nights[-1]["rollout"]["rescored"] >= 1, nights[-1]["rollout"]  # every night moves it on
        assert len(nights) <= files, "the rollout does not end"
    on = holds_each_files_rows_of_one_model(read_table(out, None, "delta"), fresh(root, None, model_a),
                                            fresh(root, None, model_b))
    assert set(on.values()) == {"B"}
    return nights


def test_a_rollout_sized_to_a_window_ends_with_the_new_models_table(tmp_path):
    nights = rolled_out_in_windows(str(tmp_path), 6, "45s")
    # The first night of the new model has no rate of it measured here (the older model's would be another cost): one
    # file, to measure it; the next nights are sized on that rate.
    first, second = nights[0]["rollout"], nights[1]["rollout"]
    assert first["rescored"] == 1 and "a first step of 1 file" in first["window"], first
    assert "no night of" in first["window"] and "fit in 45s" in second["window"] and "this table's" in second["window"]


@pytest.mark.slow  # minutes: the CI test above runs the same code on a table of seconds
def test_a_night_sized_to_a_window_ends_within_one_and_a_half_windows(tmp_path):
    # 24 files of 40 photo-sized images, resnet50 and resnet101 at their own 224 px: a full re-score takes minutes here.
    nights = rolled_out_in_windows(str(tmp_path), 24, "60s", ("--arch", "resnet50"), ("--arch", "resnet101"), rows=40)
    for night in nights:
        assert night["seconds"] <= 1.5 * 60, (night["seconds"], night["rollout"])
