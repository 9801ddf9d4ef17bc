"""The night's one decision (job.output.night.decide_night), case by case, with no store: what a run keeps, adopts,
runs and removes for each state of the output and each flag; and what the table vouches for before it (vouched_input)."""

from __future__ import annotations

import pytest

from job.config import JobConfig
from job.errors import JobError
from job.input.data_files import FileIdentity, Listing
from job.input.dataset_check import InputColumns
from job.input.plan import InputFile
from job.output.night import Held, Night, decide_night, vouched_input
from job.output.table import Snapshot, TableFile
from tests.common.parts import a_manifest

V1, V2 = FileIdentity(10, 1), FileIdentity(12, 2)  # two versions of an input file
PLANNED = {"part-a": InputFile("in/a", 3, V1), "part-b": InputFile("in/b", 3, V1)}


def config(**flags) -> JobConfig:
    return JobConfig(input="in", output="out", weights="random", **flags)


def table(*parts: str) -> Held:
    """A finished table listing ``parts`` (each made from V1 of its file), holding them all."""
    snapshot = Snapshot({part.removeprefix("part-"): TableFile(part, V1, 3, 0) for part in parts}, {}, "_index/r.parquet")
    return Held("out", ("_SUCCESS.json", *parts), frozenset(parts), a_manifest(), snapshot)


def footers(**records):
    """A footer reader that knows ``records`` (part -> (rows, identity)) and fails on any other part."""
    def read(names):
        return {name: (records[name][0], {"identity": records[name][1].to_dict()}) for name in names}
    return read


def nothing(names):
    assert not names, f"no footer should be read, asked for {names}"
    return {}


def test_a_whole_table_has_nothing_to_do_on_resume_and_keeps_everything_unread_on_incremental():
    assert decide_night(config(resume=True), PLANNED, table("part-a", "part-b"), nothing).done
    night = decide_night(config(incremental=True), PLANNED, table("part-a", "part-b"), nothing)
    assert night.kept == {"part-a": None, "part-b": None} and night.pending(PLANNED) == [] and not night.changes_table


def test_a_part_gone_from_a_finished_table_is_run_again_by_either_flag():
    held = table("part-a", "part-b")
    held = Held(held.uri, ("_SUCCESS.json", "part-a"), frozenset({"part-a"}), held.finished, held.snapshot)
    for flags in ({"resume": True}, {"incremental": True}):
        night = decide_night(config(**flags), PLANNED, held, nothing)
        assert not night.done and night.pending(PLANNED) == ["part-b"], flags


def test_a_stopped_nights_part_is_adopted_when_its_footer_proves_it_else_run_again():
    held = table("part-a")
    held = Held(held.uri, (*held.files, "part-b"), frozenset({"part-a", "part-b"}), held.finished, held.snapshot)
    night = decide_night(config(resume=True), PLANNED, held, footers(**{"part-b": (3, V1)}))
    assert night.adopted == ["part-b"] and night.pending(PLANNED) == [] and night.changes_table
    night = decide_night(config(incremental=True), PLANNED, held, footers(**{"part-b": (3, V2)}))
    assert night.pending(PLANNED) == ["part-b"] and "running it again" in night.notes[0]


def test_parts_of_files_gone_are_removed_or_kept_on_request():
    planned = {"part-a": PLANNED["part-a"]}
    assert decide_night(config(incremental=True), planned, table("part-a", "part-b"), nothing).removed == ("part-b",)
    night = decide_night(config(incremental=True, keep_removed=True), planned, table("part-a", "part-b"), nothing)
    assert night.removed == () and list(night.kept_removed) == ["b"] and night.changes_table


@pytest.mark.parametrize(("flags", "held", "refusal"), [
    ({}, table("part-a"), "already holds a finished job"),
    ({}, Held("out", ("part-a",), frozenset({"part-a"})), "holds a partial output of an earlier run \\(1 committed parts"),
    ({"resume": True}, Held("out", ("part-z",), frozenset({"part-z"})), "out/part-z belongs to no input file of this plan"),
    ({"incremental": True}, Held("out", ("_SUCCESS.json",), frozenset(), a_manifest()), "written by an older version"),
])
def test_what_is_refused_names_the_fix(flags, held, refusal):
    with pytest.raises(JobError, match=refusal):
        decide_night(config(**flags), PLANNED, held, footers(**{"part-a": (3, V1), "part-z": (3, V1)}))


def test_resume_replaces_a_part_of_an_earlier_version_of_a_planned_file_and_refuses_one_of_a_file_gone():
    """Each version of an input file gets a part of its own: --resume after the file changed finds the old one."""
    def read(names):
        return {name: (3, {"input_file": {"part-a-old": "a", "part-z": "z"}[name], "identity": V2.to_dict()})
                for name in names}

    held = Held("out", ("part-a-old",), frozenset({"part-a-old"}))
    night = decide_night(config(resume=True), PLANNED, held, read, sources=lambda: {"a", "b"})
    assert night.removed == ("part-a-old",) and night.pending(PLANNED) == ["part-a", "part-b"]
    gone = Held("out", ("part-a-old", "part-z"), frozenset({"part-a-old", "part-z"}))
    with pytest.raises(JobError, match="out/part-z belongs to no input file of this plan"):
        decide_night(config(resume=True), PLANNED, gone, read, sources=lambda: {"a", "b"})


def test_overwrite_clears_and_an_empty_prefix_runs_everything():
    assert decide_night(config(overwrite=True), PLANNED, table("part-a"), nothing) == Night(clear=True)
    assert decide_night(config(), PLANNED, Held("out"), nothing).pending(PLANNED) == ["part-a", "part-b"]


COLUMNS = {"id_column": "id", "shape_columns": False, "ids_as_text": True}


def a_table_of(files: dict[str, TableFile], **manifest) -> Held:
    snapshot = Snapshot(files, COLUMNS, "_index/r.parquet")
    return Held("out", ("_SUCCESS.json", *(f.part for f in files.values())), frozenset(f.part for f in files.values()),
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
    delta = Held("out", ("_delta_log/00000000000000000000.json", "part-a"), frozenset({"part-a"}))
    listing = Listing({"/in/a": V1}, images=False)
    with pytest.raises(JobError, match="out holds a delta table and --table-format is parquet; pass --table-format delta"):
        vouched_input(config(incremental=True), delta, listing, "/in")
    recorded = a_table_of({"a": TableFile("part-a", V1, 3, 0)}, config={"table_format": "iceberg"})
    with pytest.raises(JobError, match="holds a iceberg table and --table-format is delta"):
        vouched_input(config(incremental=True, table_format="delta"), recorded, listing, "/in")
    assert vouched_input(config(overwrite=True), delta, listing, "/in").files is None
