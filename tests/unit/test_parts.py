"""PartCollector: interleaved and repeated rows become one whole part per input file, each row once."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from job.errors import DataError
from job.output.parts import PartCollector, failure_positions, positions, with_position
from tests.common.datasets import write_mixed
from tests.common.parts import job_parts, predictions


def block(index: int, start: int, count: int):
    """Output rows ``start..start+count`` of input file ``index``, as an engine hands them over."""
    ids = [f"f{index}-{i}" for i in range(start, start + count)]
    return with_position(predictions(ids), *positions(index, start, count))


def test_rows_arriving_interleaved_and_twice_commit_each_file_once_in_input_order(tmp_path):
    write_mixed(str(tmp_path / "in"), rows_per_file=6)
    parts, files = job_parts(str(tmp_path / "in"), str(tmp_path / "out"))
    collector = PartCollector(parts, files)
    assert collector.add(block(1, 3, 3)) == [] and collector.add(block(0, 0, 4)) == []
    assert collector.add(block(1, 3, 3)) == []  # a re-executed block: dropped, not counted twice
    done = collector.add(block(1, 0, 4))  # overlaps what file 1 already has, completes it
    assert done == [(parts.name(files[1]), 6)]
    assert collector.add(block(1, 0, 2)) == []  # file 1 is committed: later copies change nothing
    with pytest.raises(RuntimeError, match=r"1 input files got only some of their rows \(e\.g\. .*part-00000.parquet: 4 of 6\)"):
        collector.check_complete()
    assert collector.add(block(0, 2, 4)) == [(parts.name(files[0]), 6)]
    collector.check_complete()
    assert collector.repeated == 3 + 1 + 2 + 2  # each row that came again, once per time: the manifest's redone rows
    for index in (0, 1):
        ids = pq.read_table(tmp_path / "out" / parts.name(files[index])).column("id").to_pylist()
        assert ids == [f"f{index}-{i}" for i in range(6)]  # whole, each row once, in input order


def test_a_failed_row_raises_its_data_error_once_the_rows_beside_it_are_committed(tmp_path):
    """A reader's DataError travels as a FAILED row (no worker traceback, no retry) and is raised where rows are gathered."""
    write_mixed(str(tmp_path / "in"), rows_per_file=6)
    parts, files = job_parts(str(tmp_path / "in"), str(tmp_path / "out"))
    row = predictions([""])
    failure = with_position(row.set_column(row.schema.get_field_index("error"), "error", pa.array(["x.parquet: damaged"])),
                            *failure_positions())
    with pytest.raises(DataError, match=r"^x\.parquet: damaged$"):
        PartCollector(parts, files).add(pa.concat_tables([block(0, 0, 6), failure]))
    assert pq.read_table(tmp_path / "out" / parts.name(files[0])).column("id").to_pylist() == [f"f0-{i}" for i in range(6)]


def test_progress_counts_each_new_row_once_per_model_call_at_its_stamp(tmp_path):
    """A Ray block holds the rows of several model calls: each call is one event, at the model's time."""
    from job.timeline import MODEL_DONE_AT

    write_mixed(str(tmp_path / "in"), rows_per_file=6)
    parts, files = job_parts(str(tmp_path / "in"), str(tmp_path / "out"))
    collector = PartCollector(parts, files)
    stamped = block(0, 0, 4).append_column(MODEL_DONE_AT, pa.array([1.0, 1.0, 2.0, 2.0]))
    collector.add(stamped)
    collector.add(stamped)  # re-executed: no new rows, no event
    collector.add(block(0, 3, 3).append_column(MODEL_DONE_AT, pa.array([3.0, 3.0, 3.0])))  # row 3 seen before
    assert collector.progress == [(1.0, 2), (2.0, 2), (3.0, 2)]

