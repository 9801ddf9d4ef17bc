"""--dry-run: scenarios the local, Ray and Spark tests run the same way.

After a few nights with files added, changed and deleted, and a privacy DELETE by source, a dry run of the next night
(another model, rolled out a file a night) announces exactly the files and images that night then scores, by action and
by model (each figure held to the real night's manifest), writes nothing (the output's listing is the same before and
after), takes no lease (it runs while another run holds one), and meets a bad option's refusal as the night does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from job.lease.lease import LeaseOwner, OutputLease
from job.night.options import model_label
from storage import resolve
from tests.integration.checks_scenarios import files_under, job_args
from tests.integration.incremental_scenarios import delete, write_night
from tests.integration.privacy_scenarios import delete_by_source
from tests.integration.promises_scenarios import A, B

Main = Callable[[Sequence[str] | None], dict]


def a_dry_run_announces_what_the_night_scores(main: Main, root: str, endpoint: str | None, table_format: str,
                                              *engine: str) -> None:
    source, out = f"{root}/in", f"{root}/out"
    write_night(source, endpoint, 0, 4)
    args = job_args(source, out, endpoint, "--incremental", "--table-format", table_format, *engine)
    main([*args, *A])
    write_night(source, endpoint, 4, 1)  # a file added...
    write_night(source, endpoint, 1, 1, prefix="again")  # ...one changed...
    delete(source, endpoint, "part-00002.parquet")  # ...one gone
    main([*args, *A])
    if table_format != "parquet":
        delete_by_source(out, endpoint, table_format, "part-00003.parquet")  # a privacy request: every row of a file
    write_night(source, endpoint, 5, 2)
    write_night(source, endpoint, 4, 1, prefix="changed")
    tonight = [*args, *B, "--rollout-files", "1"]
    before = files_under(out, endpoint)
    other = OutputLease.acquire(resolve(out, endpoint), LeaseOwner.this_process("another-run"))  # a run holds it
    try:
        dry = main([*tonight, "--dry-run", "json"])
    finally:
        other.release()
    assert files_under(out, endpoint) == before, "a dry run wrote"
    night = main(tonight)
    assert (dry["files_to_score"], dry["images_to_score"]) == (night["input_files"]["run"], night["input_files"]["rows_run"])
    delta, actions = night["table"]["delta"], dry["actions"]
    counted = {action: actions.get(action, {}).get("files", 0) for action in
               ("score new", "re-score changed", "re-score for a rollout", "drop")}
    assert counted == {"score new": len(delta["added"]), "re-score changed": len(delta["replaced"]),
                       "re-score for a rollout": night["rollout"]["rescored"], "drop": len(delta["removed"])}, (counted, delta)
    new_model = model_label(night["output_options"])
    for action in ("score new", "re-score changed", "re-score for a rollout"):
        if action in actions:
            assert set(actions[action]["by_model"]) == {new_model}, actions[action]
    assert dry["rate_source"] and dry["estimated_seconds"] > 0


def a_bad_option_is_refused_by_a_dry_run_as_by_the_night(main: Main, root: str, refused: Callable) -> None:
    source, out = f"{root}/in", f"{root}/out"
    write_night(source, None, 0, 1)
    args = job_args(source, out, None, "--incremental", *A)
    main(args)
    assert refused([*args, "--topk", "3", "--dry-run"]) == refused([*args, "--topk", "3"])
