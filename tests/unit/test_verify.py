"""The final check's uniqueness (``job.night.check.require_unique``) on real parts: the ids a run wrote are held
against each other and against the kept parts' by hash, and every repeat is confirmed by value before it fails a run."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from job.errors import DataError
from job.ids.hashes_by_file import HashesByFile
from job.night.check import part_hashes, require_unique
from storage import resolve


def part(root, name: str, ids: list[str]) -> np.ndarray:
    """A committed part of ``ids`` under ``root``, and its ids' hashes as the final check makes them."""
    table = pa.table({"id": pa.array(ids, pa.string()), "error": pa.array([None] * len(ids), pa.string())})
    pq.write_table(table, root / name)
    return part_hashes(table.column("id"), True)


def by_part(hashes: dict[str, np.ndarray]) -> HashesByFile:
    return HashesByFile.of(hashes)


def kept_table(root, files: int, ids_each: int) -> dict[str, np.ndarray]:
    return {f"kept-{k}.parquet": part(root, f"kept-{k}.parquet", [f"old-{k}-{i}" for i in range(ids_each)])
            for k in range(files)}


def test_new_ids_against_the_kept_parts_pass_when_all_differ(tmp_path):
    kept = kept_table(tmp_path, 4, 5)
    read = {"new.parquet": part(tmp_path, "new.parquet", ["new-0", "new-1"])}
    require_unique(resolve(str(tmp_path)), by_part({**kept, **read}), True)


@pytest.mark.parametrize("holder", [0, 3])  # the first kept part and the last
def test_a_new_id_a_kept_part_holds_is_named_with_both_parts(tmp_path, holder):
    kept = kept_table(tmp_path, 4, 5)
    read = {"new.parquet": part(tmp_path, "new.parquet", ["new-0", f"old-{holder}-3"])}
    with pytest.raises(DataError, match=rf"output repeats ids: 'old-{holder}-3' is at \S*/kept-{holder}\.parquet row 3, "
                                        r"\S*/new\.parquet row 1 \(1 ids"):
        require_unique(resolve(str(tmp_path)), by_part({**kept, **read}), True)


def test_an_id_repeated_among_the_new_parts_is_named(tmp_path):
    kept = kept_table(tmp_path, 2, 3)
    read = {"a.parquet": part(tmp_path, "a.parquet", ["x", "y"]), "b.parquet": part(tmp_path, "b.parquet", ["z", "y"])}
    with pytest.raises(DataError, match=r"output repeats ids: 'y' is at \S*/a\.parquet row 1, \S*/b\.parquet row 1 \(1 ids"):
        require_unique(resolve(str(tmp_path)), by_part({**kept, **read}), True)


def test_a_shared_hash_of_different_ids_is_no_repeat(tmp_path):
    """A hash the kept facts share with a new id, while the kept part's ids differ (a collision): read, then let go."""
    read = {"new.parquet": part(tmp_path, "new.parquet", ["new-0"])}
    kept = kept_table(tmp_path, 1, 3)
    kept["kept-0.parquet"] = np.concatenate([kept["kept-0.parquet"], read["new.parquet"]])
    require_unique(resolve(str(tmp_path)), by_part({**kept, **read}), True)


@pytest.mark.parametrize("repeat", [False, True])
def test_the_kept_parts_are_asked_through_the_index_not_read(tmp_path, repeat):
    """Parts kept unread come without hashes: the index says which of the new ones they hold, and only those parts
    are read, to confirm by value."""
    from job.ids.index import IdIndex, write_index

    output = resolve(str(tmp_path))
    kept = kept_table(tmp_path, 3, 4)
    index = IdIndex.read(output, write_index(output, "run-1", kept))
    read = {"new.parquet": part(tmp_path, "new.parquet", ["new-0", "old-2-1" if repeat else "new-1"])}
    (tmp_path / "kept-0.parquet").unlink()  # a part the index rules out is never opened
    holding = lambda hashes: index.held(hashes, list(kept))  # noqa: E731
    if not repeat:
        require_unique(output, by_part(read), True, holding)
        return
    with pytest.raises(DataError, match=r"output repeats ids: 'old-2-1' is at \S*/kept-2\.parquet row 1, \S*/new\.parquet row 1"):
        require_unique(output, by_part(read), True, holding)


@pytest.mark.parametrize("ids_as_text", [True, False])
def test_parts_read_in_groups_keep_each_parts_own_hashes_and_name_the_one_that_changed(tmp_path, ids_as_text):
    """The final check hashes the ids of many parts in one call (FILES_HASHED_TOGETHER): each part still gets
    its own hashes, rows and errors, and the one part (in the second group) whose ids are not its input's is named."""
    from job.input.plan import InputFile
    from job.ids.hashing import FILES_HASHED_TOGETHER, ids_digest
    from job.night.check import verify

    def ids_of(k: int) -> list[str]:
        return [str(1000 * k + i) for i in range(k % 3 + 1)]  # 1 to 3 rows a part, integer-like text

    parts = FILES_HASHED_TOGETHER + 6
    table = {}
    for k in range(parts):
        name = f"part-{k:05d}.parquet"
        errors = [None] * len(ids_of(k))
        errors[0] = "undecodable" if k % 5 == 0 else None
        pq.write_table(pa.table({"id": ids_of(k), "error": pa.array(errors, pa.string())}), tmp_path / name)
        as_input = pa.array(ids_of(k)) if ids_as_text else pa.array([int(i) for i in ids_of(k)], pa.int64())
        table[name] = InputFile(f"in/{k}.parquet", len(ids_of(k)), ids_digest=ids_digest(part_hashes(as_input, ids_as_text)))
    verified = verify(resolve(str(tmp_path)), table, table, {}, ids_as_text)
    ends = np.cumsum(verified.hashes.sizes)
    by_name = dict(zip(verified.hashes.names, np.split(verified.hashes.flat, ends[:-1])))
    for k in (0, FILES_HASHED_TOGETHER - 1, FILES_HASHED_TOGETHER, parts - 1):
        facts = verified.facts[f"part-{k:05d}.parquet"]
        expected = part_hashes(pa.array(ids_of(k)), ids_as_text)
        assert np.array_equal(by_name[f"part-{k:05d}.parquet"], expected)
        assert facts.rows == len(ids_of(k)) and facts.errored == (k % 5 == 0)
    assert verified.hashes.names == tuple(table)  # in the order read, each once
    assert verified.counts.errored == len(range(0, parts, 5)) and len(verified.examples) == 3

    k = FILES_HASHED_TOGETHER + 2
    changed, other_ids = f"part-{k:05d}.parquet", [str(-1 - i) for i in range(len(ids_of(k)))]  # as many rows, other ids
    pq.write_table(pa.table({"id": other_ids, "error": pa.array([None] * len(other_ids), pa.string())}), tmp_path / changed)
    with pytest.raises(DataError, match=rf"{changed} holds other ids than its input file in/{k}\.parquet"):
        verify(resolve(str(tmp_path)), table, table, {}, ids_as_text)
