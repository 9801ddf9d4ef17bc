"""A new model rolled out night by night (--incremental --rollout-files N): scenarios the local, Ray and Spark tests
run the same way, on the plain folder, Delta and Iceberg.

A table made by model A (ResNet50) over 24 input files; then nights with model B (ResNet18, the same columns) and a
budget of a few files, one of them also adding a file and replacing another. After every night each input id is in
the table exactly once; every file's rows are one model's, and equal what a fresh run of that model writes for them;
a night re-scores at most its budget of A's files, the oldest first; the manifest says how far the rollout is. The
last night leaves a table equal to a fresh full run of B, and the night after is a plain one. A night killed with
SIGKILL mid-rollout is finished by the next.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence

import pytest

from job.errors import JobError
from job.night.held import list_parts
from runners import local_job
from storage import resolve
from tests.common.contract import read_output
from tests.integration.checks_scenarios import job_args
from tests.integration.incremental_scenarios import write_night
from tests.integration.object_scenarios import SMALL
from tests.integration.privacy_scenarios import compact, delete_by_source
from tests.integration.table_scenarios import read_delta, read_iceberg

Main = Callable[[Sequence[str] | None], dict]
FILES, ROWS = 24, 3  # write_night's files: part-00000 ... part-00023, 3 images each
# Two models of the same columns (random weights: job_args), on a tiny input (the scenario tests the nights, not a model).
A, B = ("--arch", "resnet50", *SMALL), ("--arch", "resnet18", *SMALL)
COLUMNS = ("label", "topk_labels", "error")
KILL_WAIT_S = 300  # a loaded 2-core machine loads a model and writes its first part slowly


def read_table(out: str, endpoint: str | None, table_format: str) -> list[dict]:
    if table_format == "delta":
        return read_delta(out, endpoint).to_pylist()
    if table_format == "iceberg":
        return read_iceberg(out, endpoint).to_pylist()
    return read_output(out, endpoint)[0]


def fresh(root: str, endpoint: str | None, model: Sequence[str]) -> dict[str, dict]:
    """What a fresh full run of ``model`` over the input as it is writes: each id's row (the local engine: every engine
    writes the same rows, runners.compare holds them to it)."""
    out = f"{root}/fresh-{uuid.uuid4().hex[:8]}"
    local_job.main([*job_args(f"{root}/in", out, endpoint, *model), "--workers", "0"])
    return {row["id"]: row for row in read_output(out, endpoint)[0]}


def holds_each_files_rows_of_one_model(rows: list[dict], a: dict[str, dict], b: dict[str, dict],
                                       absent: frozenset[str] = frozenset()) -> dict[str, str]:
    """Every id once but ``absent``; each file's rows all of A or all of B, each as that model's fresh run wrote it;
    {file: "A"|"B"}."""
    ids = [row["id"] for row in rows]
    assert len(ids) == len(set(ids)) and set(ids) == set(b) - absent, f"{len(ids)} rows, {len(set(ids))} ids, {len(b)} planned"
    models = {a[next(iter(a))]["model"]: ("A", a), b[next(iter(b))]["model"]: ("B", b)}
    on: dict[str, set[str]] = {}
    for row in rows:
        name, made = models[row["model"]]
        assert all(row[c] == made[row["id"]][c] for c in COLUMNS), (row["id"], name)
        on.setdefault(row["source_file"], set()).add(name)
    assert all(len(names) == 1 for names in on.values()), on
    return {file: names.pop() for file, names in on.items()}


def a_rollout_night_by_night(main: Main, root: str, endpoint: str | None, table_format: str, budget: int,
                             *engine_args: str) -> None:
    source, out = f"{root}/in", f"{root}/out"
    write_night(source, endpoint, 0, FILES)
    night_args = job_args(source, out, endpoint, "--incremental", "--table-format", table_format, *engine_args)
    main([*night_args, *A])
    a, b = fresh(root, endpoint, A), fresh(root, endpoint, B)
    with pytest.raises(JobError, match="other options .*--rollout-files N.*--overwrite"):
        main([*night_args, *B])  # another model without --rollout-files: refused, naming both ways
    on_a, night, on = FILES, 0, {}
    while on_a:
        night += 1
        if night == 2:  # a file added and one replaced: both scored by B, whatever the budget
            write_night(source, endpoint, FILES, 1, prefix="added")
            write_night(source, endpoint, 3, 1, prefix="replaced")
            a, b = fresh(root, endpoint, A), fresh(root, endpoint, B)
        # The replaced file, if still on A, leaves A outside the budget.
        changed = 1 if night == 2 and on.get("part-00003.parquet", "A") == "A" else 0
        manifest = main([*night_args, *B, "--rollout-files", str(budget)])
        on = holds_each_files_rows_of_one_model(read_table(out, endpoint, table_format), a, b)
        left = sum(model == "A" for model in on.values())
        assert on_a - changed - budget <= left <= on_a and manifest["rollout"]["left"]["files"] == left, (night, left)
        assert manifest["rollout"]["rescored"] == on_a - changed - left <= budget
        on_a = left
    assert night <= -(-FILES // budget) + 1
    again = main([*night_args, *B])  # the table is B's: a plain night, without the option, with nothing to do
    assert again["run_id"] == manifest["run_id"]


def a_night_killed_mid_rollout_is_finished_by_the_next(root: str, endpoint: str | None, table_format: str,
                                                       budget: int) -> None:
    """The local engine as a child process, killed with SIGKILL once it committed a part of the rollout's night."""
    source, out = f"{root}/in", f"{root}/out"
    write_night(source, endpoint, 0, FILES)
    night_args = [*job_args(source, out, endpoint, "--incremental", "--table-format", table_format), "--workers", "0"]
    local_job.main([*night_args, *A])
    before = set(list_parts(resolve(out, endpoint)))
    command = [sys.executable, "-m", "runners.local_job", *night_args, *B, "--rollout-files", str(budget),
               "--batch-size", "1"]  # one image a model call: the night runs long enough to be killed in it
    killed = _killed_after_a_new_part(command, out, endpoint, before)
    assert killed, "the rollout's night finished before the kill: nothing was tested"
    manifest = local_job.main([*night_args, *B, "--rollout-files", str(budget)])
    on = holds_each_files_rows_of_one_model(read_table(out, endpoint, table_format), fresh(root, endpoint, A),
                                            fresh(root, endpoint, B))
    assert sum(model == "B" for model in on.values()) == budget and manifest["rollout"]["left"]["files"] == FILES - budget


def _killed_after_a_new_part(command: list[str], out: str, endpoint: str | None, before: set[str]) -> bool:
    """Start ``command`` in its own session and SIGKILL it once a part not in ``before`` is committed; whether the kill
    landed before it finished."""
    child = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + KILL_WAIT_S
    try:
        while not set(list_parts(resolve(out, endpoint))) - before:
            if child.poll() is not None:
                return False
            assert time.monotonic() < deadline, "no part of the rollout's night in time"
            time.sleep(0.05)
        os.killpg(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    return child.returncode == -signal.SIGKILL


def other_writers_during_a_rollout(main: Main, root: str, endpoint: str | None, *engine_args: str) -> None:
    """A Delta table mid-rollout: OPTIMIZE, and DELETEs by source of a file on each model. The rows deleted stay
    deleted through the rest of the rollout (a file whose every row was taken out is never scored again for it), and
    every other id is in the table once, each file's rows one model's."""
    source, out = f"{root}/in", f"{root}/out"
    write_night(source, endpoint, 0, FILES)
    night_args = job_args(source, out, endpoint, "--incremental", "--table-format", "delta", *engine_args)
    main([*night_args, *A])
    a, b = fresh(root, endpoint, A), fresh(root, endpoint, B)
    budget = 8
    main([*night_args, *B, "--rollout-files", str(budget)])  # part-00000 ... part-00007 now B's
    compact(out, endpoint, "delta")
    for name in ("part-00000.parquet", "part-00008.parquet"):  # one on B, and the oldest left on A
        delete_by_source(out, endpoint, "delta", name)
    absent = frozenset(f"img-{i:05d}" for i in [*range(0, 3), *range(24, 27)])
    for night in range(3):
        manifest = main([*night_args, *B, "--rollout-files", str(budget)])
        on = holds_each_files_rows_of_one_model(read_table(out, endpoint, "delta"), a, b, absent)
    assert manifest["rollout"]["left"]["files"] == 0 and "part-00008.parquet" not in on
