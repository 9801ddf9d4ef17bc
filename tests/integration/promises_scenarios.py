"""A night's promises under real kills and other writers' commits: scenarios the local, Ray and Spark tests run.

Each night that must die or wait runs as a child process with ``SBI_FAILPOINT`` (``job.failpoints``): SIGKILLed at a
named step, or held there while the test commits as another writer (a DELETE by source or by id, an OPTIMIZE), then
let go. After every night: every input id is in the table once, the deleted rows are absent, the table reads whole
(every data file its current version names is there), and the exit codes are the documented ones.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from job.night.held import list_parts
from job.output.rows import SOURCE
from storage import resolve
from tests.integration.checks_scenarios import job_args
from tests.integration.incremental_scenarios import ROWS_PER_FILE, write_night
from tests.integration.object_scenarios import SMALL
from tests.integration.privacy_scenarios import delete_by_source, iceberg_writer
from tests.integration.table_scenarios import delta_options, read_delta, read_iceberg
from tests.unit.test_layers import ROOT

Main = Callable[[Sequence[str] | None], dict]
A, B = ("--arch", "resnet50", *SMALL), ("--arch", "resnet18", *SMALL)  # two models of the same columns
CHILD_LIMIT_S = 600  # a loaded 2-core machine starts an engine and scores a few images slowly


def ids_of(out: str, endpoint: str | None, table_format: str) -> list[str]:
    """Every id the table's current version holds, as its readers read it (it must read whole)."""
    table = read_delta(out, endpoint) if table_format == "delta" else read_iceberg(out, endpoint)
    return table.column("id").to_pylist()


def models_of(out: str, endpoint: str | None, table_format: str) -> dict[str, set[str]]:
    """Each input file's set of models in the table."""
    table = read_delta(out, endpoint) if table_format == "delta" else read_iceberg(out, endpoint)
    on: dict[str, set[str]] = {}
    for source, model in zip(table.column(SOURCE).to_pylist(), table.column("model").to_pylist()):
        on.setdefault(source, set()).add(model)
    return on


def holds_once(out: str, endpoint: str | None, table_format: str, expected: set[str]) -> None:
    ids = ids_of(out, endpoint, table_format)
    assert len(ids) == len(set(ids)) and set(ids) == expected, (sorted(set(ids) ^ expected), len(ids) - len(set(ids)))


def delete_ids(out: str, endpoint: str | None, table_format: str, ids: Sequence[str]) -> None:
    """A privacy request's DELETE of some rows by id."""
    where = f"id IN ({', '.join(repr(i) for i in ids)})"
    if table_format == "delta":
        from deltalake import DeltaTable

        DeltaTable(out, storage_options=delta_options(endpoint)).delete(where)
    else:
        from pyiceberg.expressions import In

        iceberg_writer(out, endpoint, lambda table: table.delete(In("id", list(ids))))


class Night:
    """A night as a child process (``python -m <module> ARGS``), with a failpoint."""

    def __init__(self, module: str, argv: Sequence[str], failpoint: str | None, folder: Path, env: dict | None = None):
        environment = {**os.environ, **(env or {})}
        if failpoint:
            environment["SBI_FAILPOINT"] = failpoint
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.log = open(folder / "stderr", "w")
        self.process = subprocess.Popen([sys.executable, "-m", module, *argv], cwd=ROOT, env=environment,
                                        stdout=subprocess.DEVNULL, stderr=self.log, start_new_session=True,
                                        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

    def reached(self, step: str) -> None:
        """Wait until the night pauses at ``step``."""
        deadline = time.monotonic() + CHILD_LIMIT_S
        while not (self.folder / f"{step}.reached").exists():
            assert self.process.poll() is None, f"the night ended before {step}: {self.stderr()}"
            assert time.monotonic() < deadline, f"the night never reached {step}: {self.stderr()}"
            time.sleep(0.1)

    def go(self, step: str) -> None:
        (self.folder / f"{step}.go").write_text("go")

    def wait(self) -> int:
        try:
            code = self.process.wait(timeout=CHILD_LIMIT_S)
        finally:
            if self.process.poll() is None:
                os.killpg(self.process.pid, signal.SIGKILL)
            self.log.close()
        return code

    def stderr(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return (self.folder / "stderr").read_text()


def killed_at(module: str, argv: Sequence[str], step: str, folder: Path) -> str:
    """Run a night that SIGKILLs itself at ``step``; assert it died so; its stderr."""
    night = Night(module, argv, f"{step}:kill", folder)
    code = night.wait()
    assert code == -signal.SIGKILL, (code, night.stderr())
    return night.stderr()


def a_delete_during_a_rollout_night_stays_deleted(main: Main, module: str, root: str, endpoint: str | None,
                                                  table_format: str, *engine: str) -> None:
    """Another writer deletes a file's rows by source, and some ids of another, after the rollout's night planned and
    while it re-scores them: the night commits neither back, and later nights keep them out."""
    source, out, folder = f"{root}/in", f"{root}/out", Path(root) / "night"
    every = set(write_night(source, endpoint, 0, 4))
    args = job_args(source, out, endpoint, "--incremental", "--table-format", table_format, *engine)
    main([*args, *A])
    night = Night(module, [*args, *B, "--rollout-files", "4"], "planned:pause:" + str(folder), folder)
    night.reached("planned")  # planned: every file is re-scored tonight
    delete_by_source(out, endpoint, table_format, "part-00001.parquet")
    gone = [f"img-{ROWS_PER_FILE * 2:05d}"]  # one id of part-00002
    delete_ids(out, endpoint, table_format, gone)
    night.go("planned")
    assert night.wait() == 0, night.stderr()
    deleted = {f"img-{i:05d}" for i in range(ROWS_PER_FILE, 2 * ROWS_PER_FILE)} | set(gone)
    holds_once(out, endpoint, table_format, every - deleted)
    manifest = main([*args, *B])  # the table is B's; the night after keeps them out
    holds_once(out, endpoint, table_format, every - deleted)
    assert manifest["counts"]["withheld"] == len(deleted) - ROWS_PER_FILE or manifest["counts"]["rows_out"] == len(every - deleted)


def a_night_after_a_lost_manifest_commits_its_own(main: Main, module: str, root: str, endpoint: str | None,
                                                  table_format: str, *engine: str) -> None:
    """A night killed between its commit and its manifest; the next night (a new file) commits its rows, exit 0; then
    another model's rollout night never deletes a part the table names, and the table reads whole."""
    source, out, folder = f"{root}/in", f"{root}/out", Path(root) / "killed"
    every = set(write_night(source, endpoint, 0, 2))
    args = job_args(source, out, endpoint, "--incremental", "--table-format", table_format, *engine)
    main([*args, *A])
    every |= set(write_night(source, endpoint, 2, 1))
    killed_at(module, [*args, *A], "committed", folder)
    holds_once(out, endpoint, table_format, every)  # the lost night's commit landed
    every |= set(write_night(source, endpoint, 3, 1))
    night = main([*args, *A])
    holds_once(out, endpoint, table_format, every)
    assert "part-00003.parquet" in night["table"]["files"] and "part-00002.parquet" in night["table"]["files"]
    every |= set(write_night(source, endpoint, 4, 1))
    killed_at(module, [*args, *A], "committed", Path(root) / "killed-again")
    for _ in range(3):  # another model, a file a night: the lost night's part leaves by its lineage, never deleted live
        main([*args, *B, "--rollout-files", "2"])
        holds_once(out, endpoint, table_format, every)
    assert all(len(models) == 1 for models in models_of(out, endpoint, table_format).values())


def rollouts_back_and_forth_never_delete_a_live_part(main: Main, root: str, endpoint: str | None, table_format: str,
                                                     *engine: str) -> None:
    """A -> B -> A -> B, each rollout whole in a night, with no time travel kept: every night deletes the parts that left
    the table at once, and never one its current version names (a re-scored part's name is new each night)."""
    source, out = f"{root}/in", f"{root}/out"
    every = set(write_night(source, endpoint, 0, 2))
    args = job_args(source, out, endpoint, "--incremental", "--table-format", table_format, "--time-travel-days", "0",
                    *engine)
    main([*args, *A])
    for model in (B, A, B):
        night = main([*args, *model, "--rollout-files", "10"])
        holds_once(out, endpoint, table_format, every)
        assert night["rollout"]["left"]["files"] == 0 and len(set().union(*models_of(out, endpoint, table_format).values())) == 1


def resume_does_what_the_line_says(main: Main, module: str, root: str, endpoint: str | None, table_format: str,
                                   *engine: str) -> None:
    """A night stopped with exit 4 (its new part deleted by another writer's cleanup before its commit), and one killed
    before its first part: the line sends the user to --resume, which scores the night's files."""
    source, out = f"{root}/in", f"{root}/out"
    every = set(write_night(source, endpoint, 0, 2))
    nightly = job_args(source, out, endpoint, "--table-format", table_format, *engine)
    main([*nightly, "--incremental"])
    every |= set(write_night(source, endpoint, 2, 1))
    folder, location = Path(root) / "stopped", resolve(out, endpoint)
    before = set(list_parts(location))
    night = Night(module, [*nightly, "--incremental"], f"checked:pause:{folder}", folder)
    night.reached("checked")
    for name in set(list_parts(location)) - before:  # the night's new part, gone as VACUUM RETAIN 0 deletes it
        location.filesystem.delete_file(location.join(name))
    night.go("checked")
    assert night.wait() == 4 and "--resume" in night.stderr().strip().splitlines()[-1], night.stderr()
    main([*nightly, "--resume"])
    holds_once(out, endpoint, table_format, every)
    every |= set(write_night(source, endpoint, 3, 1))
    killed_at(module, [*nightly, "--incremental"], "planned", Path(root) / "killed")
    main([*nightly, "--resume"])
    holds_once(out, endpoint, table_format, every)


def a_new_file_repeating_a_rescored_files_ids_is_refused_before_any_work(main: Main, root: str, endpoint: str | None,
                                                                        table_format: str, refused: Callable) -> None:
    """A rollout night whose new file repeats the ids of a file it re-scores: exit 2 before any work, naming both."""
    source, out = f"{root}/in", f"{root}/out"
    write_night(source, endpoint, 0, 2)
    args = job_args(source, out, endpoint, "--incremental", "--table-format", table_format)
    main([*args, *A])
    location = resolve(source, endpoint)
    with location.filesystem.open_input_stream(location.join("part-00000.parquet")) as f:
        copy = f.read()
    with location.writer(location.join("zz-copy.parquet")) as f:  # a new file with part-00000's ids
        f.write(copy)
    line = refused([*args, *B, "--rollout-files", "2"])
    assert line.startswith("id 'img-00000' of ") and "zz-copy.parquet row 0 is already in the table, in input file " \
        "part-00000.parquet, whose rows the table holds" in line, line


def a_rollout_of_options_of_the_same_model_is_refused_naming_overwrite(main: Main, root: str, endpoint: str | None,
                                                                      table_format: str, refused: Callable) -> None:
    source, out = f"{root}/in", f"{root}/out"
    write_night(source, endpoint, 0, 1)
    args = job_args(source, out, endpoint, "--incremental", "--table-format", table_format, *A)
    main(args)
    for flags in (("--rollout-files", "1"), ()):
        line = refused([*args, "--topk", "3", *flags])
        assert "other options of the same model (topk; " in line and "--overwrite" in line and "--rollout-files" not in line


def a_partial_delete_never_pins_a_rollout_and_counts_are_the_tables(main: Main, root: str, endpoint: str | None,
                                                                    table_format: str) -> None:
    """One id deleted from a file still on the old model: the rollout re-scores the file without it and ends; a file
    gone from the input but kept by --keep-removed is counted as stranded, not as rolled out; every count is the
    table's."""
    source, out = f"{root}/in", f"{root}/out"
    every = set(write_night(source, endpoint, 0, 4))
    args = job_args(source, out, endpoint, "--incremental", "--table-format", table_format, "--keep-removed")
    main([*args, *A])
    gone = f"img-{3 * ROWS_PER_FILE:05d}"  # an id of part-00003, the newest file: rolled out last
    delete_ids(out, endpoint, table_format, [gone])
    first = main([*args, *B, "--rollout-files", "1"])
    rollout = first["rollout"]
    assert rollout["models"][rollout["model"]] == {"files": 1, "images": ROWS_PER_FILE}
    assert sum(m["images"] for m in rollout["models"].values()) == len(every) - 1, rollout
    from tests.integration.incremental_scenarios import delete

    delete(source, endpoint, "part-00001.parquet")  # still on A, kept by --keep-removed
    nights = [main([*args, *B, "--rollout-files", "1"]) for _ in range(2)]
    last = nights[-1]["rollout"]
    assert last["left"]["files"] == 0 and last["stranded"] == {"files": 1, "images": ROWS_PER_FILE}, last
    holds_once(out, endpoint, table_format, every - {gone})
    main([*args, *B])  # done: a plain night, without --rollout-files, is not refused
    holds_once(out, endpoint, table_format, every - {gone})


def every_run_a_row_names_has_its_record(main: Main, module: str, root: str, endpoint: str | None,
                                         table_format: str) -> None:
    """A night killed between its history record and its manifest, and a record lost by hand: the next night leaves
    every run a row names recorded in _history/, and the table whole."""
    source, out = f"{root}/in", f"{root}/out"
    every = set(write_night(source, endpoint, 0, 1))
    args = job_args(source, out, endpoint, "--incremental", "--table-format", table_format)
    first = main(args)
    every |= set(write_night(source, endpoint, 1, 1))
    killed_at(module, args, "history-written", Path(root) / "killed")
    location = resolve(out, endpoint)
    location.filesystem.delete_file(location.join(f"_history/{first['run_id']}.json"))  # as an older version's kill left
    every |= set(write_night(source, endpoint, 2, 1))
    main(args)
    holds_once(out, endpoint, table_format, every)
    table = read_delta(out, endpoint) if table_format == "delta" else read_iceberg(out, endpoint)
    for run in set(table.column("run_id").to_pylist()):
        assert location.filesystem.get_file_info(location.join(f"_history/{run}.json")).is_file, run


def the_first_four_on_an_engine(main: Main, module: str, root: str, endpoint: str | None, table_format: str,
                                scratch: Path, *engine: str) -> None:
    """The first four promises on one table, for an engine whose own code runs the nights (Ray, Spark): a DELETE during
    a rollout night (the night runs in this process, held at its plan in a thread of its own); a night killed between
    its commit and its manifest, then a rollback and a rollout back with no time travel kept; a night killed before
    its first part, finished by --resume. ``scratch``: a local folder for the failpoints' files."""
    source, out = f"{root}/in", f"{root}/out"
    every = set(write_night(source, endpoint, 0, 3))
    nightly = job_args(source, out, endpoint, "--table-format", table_format, "--time-travel-days", "0", *engine)
    args = [*nightly, "--incremental"]
    main([*args, *A])
    deleted = {f"img-{i:05d}" for i in range(ROWS_PER_FILE, 2 * ROWS_PER_FILE)}  # part-00001's rows
    _held_at_its_plan(lambda: main([*args, *B, "--rollout-files", "3"]), scratch / "held",
                      lambda: delete_by_source(out, endpoint, table_format, "part-00001.parquet"))
    holds_once(out, endpoint, table_format, every - deleted)
    every |= set(write_night(source, endpoint, 3, 1))
    killed_at(module, [*args, *B], "committed", scratch / "lost")
    main([*args, *A, "--rollout-files", "5"])  # after the lost manifest, a rollback: every part the table names stays
    holds_once(out, endpoint, table_format, every - deleted)
    main([*args, *B, "--rollout-files", "5"])  # and back, the old parts deleted at once (no time travel kept)
    holds_once(out, endpoint, table_format, every - deleted)
    assert all(len(models) == 1 for models in models_of(out, endpoint, table_format).values())
    every |= set(write_night(source, endpoint, 4, 1))
    killed_at(module, [*args, *B], "planned", scratch / "before-its-first-part")
    main([*nightly, "--resume", *B])
    holds_once(out, endpoint, table_format, every - deleted)


def _held_at_its_plan(night: Callable[[], dict], folder: Path, meanwhile: Callable[[], None]) -> dict:
    """Run ``night`` in a thread of this process, held at its plan (``job.failpoints``) while ``meanwhile`` runs."""
    import threading

    folder.mkdir(parents=True, exist_ok=True)
    done: list = []
    os.environ["SBI_FAILPOINT"] = f"planned:pause:{folder}"
    try:
        thread = threading.Thread(target=lambda: done.append(_outcome(night)))
        thread.start()
        deadline = time.monotonic() + CHILD_LIMIT_S
        while not (folder / "planned.reached").exists():
            assert thread.is_alive(), f"the night ended before its plan was held: {done}"
            assert time.monotonic() < deadline, "the night never reached its plan"
            time.sleep(0.1)
        meanwhile()
        (folder / "planned.go").write_text("go")
        thread.join(CHILD_LIMIT_S)
    finally:
        del os.environ["SBI_FAILPOINT"]
    kind, value = done[0]
    if kind == "error":
        raise value
    return value


def _outcome(call: Callable[[], dict]) -> tuple[str, object]:
    try:
        return "ok", call()
    except BaseException as e:  # noqa: BLE001 - handed to the test's thread, which raises it
        return "error", e
