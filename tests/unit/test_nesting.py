"""An output inside another table, or holding one: by the names of a listing, and by the folders above, on disk."""

from __future__ import annotations

import pytest

from job.errors import JobError
from job.night.nesting import nested_table, refuse_holding_another, refuse_inside_another
from storage import resolve


@pytest.mark.parametrize(("name", "found"), [
    ("inner/_SUCCESS.json", ("inner", "a finished job (_SUCCESS.json)")),
    ("a/b/_delta_log/00000000000000000000.json", ("a/b", "a Delta table (_delta_log/)")),
    ("t/metadata/version-hint.text", ("t", "an Iceberg table (metadata/)")),
    ("_SUCCESS.json", None),  # the output's own manifest, its own Delta log and Iceberg metadata
    ("_delta_log/00000000000000000000.json", None),
    ("metadata/version-hint.text", None),
    ("_history/20261128T000000-abcd/_SUCCESS.json", None),  # the output's own bookkeeping
    ("part-x-0123abcd.parquet", None),
    ("inner/not_SUCCESS.json", None),
    ("inner/my_delta_log/x.json", None),
])
def test_a_table_below_is_told_by_its_names(name, found):
    assert nested_table(name) == found


def test_an_output_holding_another_table_is_refused_naming_both(tmp_path):
    output = resolve(str(tmp_path))
    refuse_holding_another(output, ["_SUCCESS.json", "part-a-00000000.parquet", "_delta_log/0.json"])
    with pytest.raises(JobError, match=f"--output {tmp_path} holds a finished job \\(_SUCCESS.json\\) at {tmp_path}/day/1"):
        refuse_holding_another(output, ["part-a-00000000.parquet", "day/1/_SUCCESS.json"])


@pytest.mark.parametrize(("marker", "what"), [("_SUCCESS.json", "a finished job"), ("_delta_log/0.json", "a Delta table"),
                                              ("metadata/version-hint.text", "an Iceberg table")])
def test_an_output_inside_another_table_is_refused_naming_both(tmp_path, marker, what):
    outer = tmp_path / "outer"
    refuse_inside_another(resolve(str(outer / "a" / "inner")))  # nothing above holds a table yet
    (outer / marker).parent.mkdir(parents=True, exist_ok=True)
    (outer / marker).write_text("{}")
    with pytest.raises(JobError, match=f"--output {outer}/a/inner lies inside {outer}, which holds {what}"):
        refuse_inside_another(resolve(str(outer / "a" / "inner")))
    refuse_inside_another(resolve(str(tmp_path / "beside")))  # a sibling is no table's
