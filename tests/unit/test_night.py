"""The night's one decision (job.night.planning.plan_night), case by case, with no store: what a run keeps, adopts,
scores, re-scores and removes for each state of the output, each flag and each set of options; and what the table
vouches for before it (vouched_input). Footers a case expects read are handed to ``Held`` as read already: any
other read would meet a prefix that does not exist, and fail the case."""

from __future__ import annotations

import dataclasses

import pytest

from job.config import JobConfig
from job.errors import JobError
from job.input.data_files import FileIdentity, Listing
from job.input.dataset_check import InputColumns
from job.input.plan import InputFile, InputPlan
from job.night.held import Held
from job.night.options import options_key
from job.night.decision import CHANGED, LOST, MISSING, NEW, ROLLOUT, TIMED_OUT
from job.night.planning import plan_night
from job.night.vouched import vouched_input
from job.night.record import Snapshot, TableFile
from job.night.formats import TableFiles
from job.night.formats.by_source import DataFile
from job.night.rollout import choose, rollout_line
from job.output.parts import file_part_name
from storage import resolve
from tests.common.parts import a_manifest

V1, V2 = FileIdentity(10, 1), FileIdentity(12, 2)  # two versions of an input file
OPTIONS = {"weights": "random", "source": "resnet50", "arch": "resnet50", "weights_sha256": None}  # the run's
OTHER = {**OPTIONS, "source": "resnet18", "arch": "resnet18"}  # another model's
FILES = {name: InputFile(f"/in/{name}", 3, V1) for name in "abcd"}
PART = {name: file_part_name("/in", f) for name, f in FILES.items()}  # each file's part, as a first run names it
OUT = resolve("/nowhere/out")  # never read: a footer or an index read there fails the case


def config(**flags) -> JobConfig:
    return JobConfig(input="/in", output="/nowhere/out", weights="random", **flags)


def plan(*names: str, identity: FileIdentity = V1) -> InputPlan:
    files = tuple(InputFile(f"/in/{name}", 3, identity if name == "b" else V1) for name in names)
    return InputPlan(resolve("/in"), files, "id", "image", False)


def night(flags: dict, held: Held, names: str = "ab", options: dict = OPTIONS, identity: FileIdentity = V1, run_id="r2"):
    return plan_night(config(**flags), plan(*names, identity=identity), held, options, run_id)


def table(*names: str, entries: dict | None = None, options: dict = OPTIONS, extra: tuple[str, ...] = (),
          footers: dict | None = None, **snapshot) -> Held:
    """A finished table of ``names`` (each made from V1 of its file, with ``options``), holding their parts and
    ``extra``; ``footers``: those of parts a case may read, as read already."""
    files = {name: TableFile(PART[name], V1, 3, 0, made_in=i + 1) for i, name in enumerate(names)} | (entries or {})
    made = Snapshot(files, COLUMNS, "_index/r.ids", **snapshot)
    parts = frozenset([*(f.part for f in files.values()), *extra])
    return Held(OUT, ("_SUCCESS.json", *sorted(parts)), parts, a_manifest(output_options=options), made,
                _footers=dict(footers or {}))


COLUMNS = {"id_column": "id", "shape_columns": False, "ids_as_text": True}


def footer(identity: FileIdentity, options: dict = OPTIONS, rows: int = 3, input_file: str = "b"):
    return rows, {"identity": identity.to_dict(), "options": options, "input_file": input_file}


def test_a_whole_table_has_nothing_to_do_on_resume_and_keeps_everything_unread_on_incremental():
    assert night({"resume": True}, table("a", "b")).done
    kept = night({"incremental": True}, table("a", "b"))
    assert kept.kept == {PART["a"]: None, PART["b"]: None} and not kept.pending.files and not kept.changes_table
    assert kept.unread == {PART["a"], PART["b"]} and not kept.made_by and kept.why == {}


def test_a_part_gone_from_a_finished_table_is_run_again_by_either_flag():
    held = table("a", "b")
    held = Held(OUT, ("_SUCCESS.json", PART["a"]), frozenset({PART["a"]}), held.finished, held.snapshot)
    for flags in ({"resume": True}, {"incremental": True}):
        done = night(flags, held)
        assert not done.done and [f.path for f in done.pending.files] == ["/in/b"] and done.why == {PART["b"]: MISSING}


def test_a_stopped_nights_part_is_adopted_when_its_footer_proves_it_else_run_again():
    stopped = file_part_name("/in", InputFile("/in/b", 3, V2))  # b changed; a stopped night wrote its new part
    adopted = night({"resume": True}, table("a", "b", extra=(stopped,), footers={stopped: footer(V2)}), identity=V2)
    assert adopted.adopted == {stopped: footer(V2)[1]} and not adopted.pending.files and adopted.changes_table
    redone = night({"incremental": True}, table("a", "b", extra=(stopped,), footers={stopped: footer(V1)}), identity=V2)
    assert [f.path for f in redone.pending.files] == ["/in/b"] and "running its input file again" in redone.notes[0]
    # Its part's name is the stray's: a name no part has is salted by the run. The old version's part and the stray
    # go last.
    again = file_part_name("/in", InputFile("/in/b", 3, V2), "r2")
    assert redone.why == {again: CHANGED} and redone.removed == tuple(sorted((PART["b"], stopped)))


def test_parts_of_files_gone_are_removed_or_kept_on_request():
    assert night({"incremental": True}, table("a", "b"), names="a").removed == (PART["b"],)
    kept = night({"incremental": True, "keep_removed": True}, table("a", "b"), names="a")
    assert kept.removed == () and list(kept.kept_removed) == ["b"] and kept.changes_table
    assert kept.table[PART["b"]] == InputFile("b", 3) and kept.relpath[PART["b"]] == "b" and PART["b"] in kept.unread


def test_new_files_are_scored_and_said_why():
    grown = night({"incremental": True}, table("a", "b"), names="abc")
    assert grown.why == {PART["c"]: NEW} and [f.path for f in grown.to_write.files] == ["/in/c"]


@pytest.mark.parametrize(("flags", "held", "refusal"), [
    ({}, table("a"), "already holds a finished job"),
    ({}, Held(OUT, (PART["a"],), frozenset({PART["a"]})), "holds a partial output of an earlier run \\(1 committed parts"),
    ({"resume": True}, Held(OUT, ("part-z",), frozenset({"part-z"}), _footers={"part-z": footer(V1, input_file="z")}),
     "out/part-z belongs to no input file of this plan"),
    ({"incremental": True}, Held(OUT, ("_SUCCESS.json",), frozenset(), a_manifest()), "written by an older version"),
])
def test_what_is_refused_names_the_fix(flags, held, refusal):
    with pytest.raises(JobError, match=refusal):
        night(flags, held)


def test_resume_replaces_a_part_of_an_earlier_version_of_a_planned_file():
    """Each version of an input file gets a part of its own: --resume after the file changed finds the old one."""
    held = Held(OUT, ("part-a-old",), frozenset({"part-a-old"}), _footers={"part-a-old": footer(V2, input_file="a")})
    resumed = night({"resume": True}, held)
    assert resumed.removed == ("part-a-old",) and [f.path for f in resumed.pending.files] == ["/in/a", "/in/b"]


def test_overwrite_clears_a_plain_folder_and_an_empty_prefix_runs_everything():
    cleared = night({"overwrite": True}, table("a"))
    assert cleared.clear and not cleared.kept and len(cleared.pending.files) == 2
    assert len(night({}, Held(OUT)).pending.files) == 2


def test_rows_that_timed_out_are_scored_again_beside_the_part_readers_read():
    timed_out = table("a", "b", entries={"b": TableFile(PART["b"], V1, 3, 1, transient=1, made_in=2)})
    again = night({"incremental": True}, timed_out)
    renamed = file_part_name("/in", FILES["b"], "r2")  # salted by the run: readers still read the old part meanwhile
    assert again.why == {renamed: TIMED_OUT} and again.salts == {"/in/b": "r2"} and again.removed == (PART["b"],)


def test_a_night_with_other_options_than_the_tables_is_refused_naming_rollout_and_overwrite():
    with pytest.raises(JobError, match=r"the table's rows were made with other options \(arch, source; e.g. "
                                       r"arch='resnet50', now 'resnet18'\).*--rollout-files N.*--overwrite"):
        night({"incremental": True}, table("a", "b"), options=OTHER)


def test_a_rollout_rescores_the_oldest_files_of_another_model_a_few_a_night():
    held = table("a", "b", "c", "d", entries={"a": TableFile(PART["a"], V1, 3, 0, made_in=9)})  # a: made last
    first = night({"incremental": True, "rollout_files": 2}, held, names="abcde", options=OTHER)
    # The two oldest, b and c, under names salted by the run: no earlier night's part had them.
    rescored = {file_part_name("/in", FILES[name], "r2"): name for name in "bc"}
    new = file_part_name("/in", InputFile("/in/e", 3, V1))
    assert first.why == {**dict.fromkeys(rescored, ROLLOUT), new: NEW} and first.salts == {"/in/b": "r2", "/in/c": "r2"}
    assert first.removed == (PART["b"], PART["c"]) and first.unread == {PART["a"], PART["d"]}
    assert first.made_by == {PART["a"]: options_key(OPTIONS), PART["d"]: options_key(OPTIONS)} and first.rescored == 2


def test_a_shared_tables_rescored_files_leave_by_their_lineage():
    held = dataclasses.replace(table("a", "b"), log=lambda: TableFiles([DataFile(PART["a"]), DataFile(PART["b"])], 4))
    rolled = night({"incremental": True, "rollout_files": 1, "table_format": "delta"}, held, options=OTHER)
    assert rolled.leaving.units == {"a"} and rolled.removed == () and rolled.shared
    # Its new part is watched: rows another writer deletes before the commit are withheld from it.
    (part, watched), = rolled.watched.items()
    assert rolled.why[part] == ROLLOUT and watched.unit == "a" and watched.unchanged and watched.whole
    assert rolled.planned_version == 4


def test_a_rollout_never_scores_again_what_another_writer_took_out_of_a_shared_table():
    entries = {name: TableFile(f"part-{name}", V1, 3, 0, made_in=i) for i, name in enumerate("abcd")}
    present = {"a": 0, "b": 3, "c": 1, "d": 3}  # a: a DELETE by source took every row; c: a DELETE took two
    choice = choose(entries, 2, present)  # c is re-scored: its commit withholds the two ids deleted
    assert (choice.picked, choice.taken_out) == (("b", "c"), ("a",))
    assert choose(entries, 3).picked == ("a", "b", "c")  # the plain folder: no one else writes it


def test_a_stopped_rollout_nights_part_is_adopted_by_the_next_and_another_models_is_scored_again():
    target = options_key(OTHER)
    stopped = file_part_name("/in", FILES["a"], target)
    held = table("a", "b", extra=(stopped,), footers={stopped: footer(V1, OTHER, input_file="a")})
    resumed = night({"resume": True, "rollout_files": 1}, held, options=OTHER)
    assert resumed.adopted == {stopped: footer(V1, OTHER, input_file="a")[1]} and not resumed.pending.files
    # A new file's part that a stopped night made with the old model: scored again by a rollout, refused without one.
    older = table("a", "b", extra=(PART["c"],), footers={PART["c"]: footer(V1, OPTIONS, input_file="c")})
    rolled = night({"incremental": True, "rollout_files": 1}, older, names="abc", options=OTHER)
    again = file_part_name("/in", FILES["c"], "r2")  # the stray has the plain name: tonight's part takes another
    assert rolled.why[again] == NEW and "made with other options" in rolled.notes[0]
    assert rolled.removed == (PART["a"], PART["c"])  # a re-scored, and the stray: both gone after the manifest
    with pytest.raises(JobError, match="made with other options"):
        night({"incremental": True}, older, names="abc", options=OTHER)


def test_a_rollout_is_done_when_no_file_is_left_on_another_model_and_rolling_back_is_a_rollout_too():
    target = options_key(OTHER)
    on_new = {name: TableFile(file_part_name("/in", FILES[name], target), V1, 3, 0, made_in=5) for name in "ab"}
    held = table(entries=on_new, options=OTHER, models={target: OTHER, options_key(OPTIONS): OPTIONS}, made_by=target)
    done = night({"incremental": True}, held, options=OTHER)
    assert not done.pending.files and not done.made_by and not done.rescored
    back = night({"incremental": True, "rollout_files": 1}, held, options=OPTIONS)
    assert list(back.why.values()) == [ROLLOUT] and back.rescored == 1 and len(back.made_by) == 1


def test_a_table_recorded_without_its_models_is_the_manifests_options_and_old_recipes_read_as_todays():
    legacy = {**OPTIONS, "recipe": {"resize": 232, "crop": 224, "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}
    today = {**legacy, "recipe": {**legacy["recipe"], "interpolation": "bilinear", "crop_mode": "center"}}
    kept = night({"incremental": True}, table("a", "b", options=legacy), options=today)
    assert kept.kept == {PART["a"]: None, PART["b"]: None} and kept.made_by == {}


def a_table_of(files: dict[str, TableFile], **manifest) -> Held:
    snapshot = Snapshot(files, COLUMNS, "_index/r.parquet")
    return Held(OUT, ("_SUCCESS.json", *(f.part for f in files.values())), frozenset(f.part for f in files.values()),
                a_manifest(**manifest), snapshot)


def test_the_table_vouches_for_the_listed_files_it_made_unchanged_and_gives_its_columns():
    held = a_table_of({"a": TableFile("part-a", V1, 3, 0), "b": TableFile("part-b", V1, 3, 0),
                       "gone": TableFile("part-gone", V1, 3, 0, removed=True), "c": TableFile("part-c", None, 3, 0)})
    listing = Listing({"/in/a": V1, "/in/b": V2, "/in/gone": V1, "/in/c": V1, "/in/new": V1}, images=False)
    for flags in ({"incremental": True}, {"resume": True}):
        vouched = vouched_input(config(**flags), held, listing, "/in")
        # b changed, gone was removed (its part kept by --keep-removed), c was made without an identity, new is new
        assert vouched.files == {"/in/a": InputFile("/in/a", 3, V1)}, flags
        assert vouched.columns == InputColumns("id", False, True)
    assert vouched_input(config(), held, listing, "/in").files is None  # no flag: the night refuses later, nothing vouched


def test_another_table_format_is_refused_before_anything_is_vouched_unless_overwritten():
    delta = Held(OUT, ("_delta_log/00000000000000000000.json", "part-a"), frozenset({"part-a"}))
    listing = Listing({"/in/a": V1}, images=False)
    with pytest.raises(JobError, match="out holds a delta table and --table-format is parquet; pass --table-format delta"):
        vouched_input(config(incremental=True), delta, listing, "/in")
    recorded = a_table_of({"a": TableFile("part-a", V1, 3, 0)}, config={"table_format": "iceberg"})
    with pytest.raises(JobError, match="holds a iceberg table and --table-format is delta"):
        vouched_input(config(incremental=True, table_format="delta"), recorded, listing, "/in")
    assert vouched_input(config(overwrite=True), delta, listing, "/in").files is None


def test_resume_on_a_finished_table_does_what_the_stopped_night_had_left():
    """A night stopped before its first part left the table whole: --resume scores the new file as --incremental does."""
    resumed = night({"resume": True}, table("a", "b"), names="abc")
    assert not resumed.done and resumed.why == {PART["c"]: NEW}


def test_a_lost_manifests_parts_are_adopted_from_the_log_or_scored_again_and_their_rows_leave():
    """A night killed between its commit and its manifest: its parts are in the table's log, in no manifest."""
    lost = file_part_name("/in", FILES["c"])  # c, new that night: committed
    shared = {"incremental": True, "table_format": "delta"}
    held = dataclasses.replace(table("a", "b", extra=(lost,), footers={lost: footer(V1, input_file="c")}),
                               log=lambda: TableFiles([DataFile(PART["a"]), DataFile(PART["b"]), DataFile(lost)], 7))
    adopted = night(shared, held, names="abc")
    assert adopted.adopted == {lost: footer(V1, input_file="c")[1]} and lost not in adopted.adds and not adopted.removed
    # Another model tonight: the lost part does not prove c, so c is scored again under a new name, and its rows leave.
    other = night({**shared, "rollout_files": 1}, held, names="abc", options=OTHER)
    (decision,) = [d for d in other.decisions if d.unit == "c"]
    assert decision.reason == LOST and decision.part != lost and other.live_strays == {lost: "c"}
    assert "c" in other.leaving.units and other.known[lost] == "c" and other.removed == (lost,)


def test_a_rescored_part_never_takes_a_name_a_part_had():
    """A, B, A, B: each night's re-scored part is salted by its run, so no two nights write one name."""
    target_b = options_key(OTHER)
    on_b = {"a": TableFile(file_part_name("/in", FILES["a"], "r1"), V1, 3, 0, made_in=2, made_by=target_b)}
    held = table("a", entries=on_b, models={target_b: OTHER, options_key(OPTIONS): OPTIONS}, made_by=options_key(OPTIONS))
    parts = {night({"incremental": True, "rollout_files": 1}, held, names="a", run_id=run).why.popitem()[0]
             for run in ("r2", "r3")}
    assert len(parts) == 2 and on_b["a"].part not in parts
