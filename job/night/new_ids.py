"""What an incremental run checks before any work: the new files' ids against the table's.

The id check (``job.input.unique_ids``) holds the new and changed input files' ids unique among
themselves; ``check_new_ids`` holds them against the ids of the parts the run keeps, through the
table's index (``job.ids.index``: every part's ids as 64-bit hashes, read once a run), so no old
part is read unless a hash repeats, and then only the parts holding it, to confirm by value.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from job.errors import JobError
from job.input.plan import InputFile, InputPlan
from job.ids.index import IdIndex
from job.input.unique_ids import hashes_of, places_of
from job.night.check import ids_hashed_to
from storage import Location


def moved_files(plan: InputPlan, new: list[InputFile], index: IdIndex, gone: Mapping[str, int]) -> set[str]:
    """Of the input files gone (``gone``: path relative to --input -> its rows), those whose every id the new files hold.

    A file renamed between nights reappears whole under its new name; --keep-removed must not keep
    its old part beside the new one. Compared by the ids' hashes in the table's index: a gone file
    holding as many of the new hashes as it has rows (its ids, unique in the table) holds only those.
    """
    if plan.id_column is None or not new or not gone:
        return set()
    fresh = hashes_of(plan.location, [(f.path, f.rows) for f in new], plan.id_column, plan.ids_as_text)
    return {name for name, hashes in index.held(fresh, gone).items() if 0 < gone[name] == len(hashes)}


def check_new_ids(plan: InputPlan, new: list[InputFile], output: Location, index: IdIndex, kept: Mapping[str, str],
                  listed: Mapping[str, InputFile] | None = None) -> None:
    """Refuse (one line) a new file's id that the table keeps after tonight.

    ``kept``: the input units whose rows the table keeps (unread, or re-scored as they are) -> their part;
    ``listed``: those of them listed tonight as the table's rows were made from them, whose ids a repeat is confirmed
    in by reading the input file (their part may lie compacted into another writer's file); the others' by their part.
    ``index``: the table's.
    """
    listed = listed or {}
    if plan.id_column is None or not new or not kept:
        return  # positional ids are "<path relative to --input>:<row>": unique by construction
    fresh = hashes_of(plan.location, [(f.path, f.rows) for f in new], plan.id_column, plan.ids_as_text)
    old = index.held(fresh, kept)  # only the kept units holding a new hash, and those hashes
    if not old:
        return
    repeated = np.unique(np.concatenate(list(old.values())))
    new_places = places_of(plan.location, [(f.path, f.rows) for f in new], plan.id_column, plan.ids_as_text, repeated)
    for relative in old:
        held = _values_in(plan, output, relative, kept[relative], listed.get(relative), repeated) & set(new_places)
        if held:
            value = sorted(held)[0]
            path, row = new_places[value][0]
            where = (f"input file {relative}, whose rows the table holds" if relative in listed else
                     f"{output.uri_of(output.join(kept[relative]))} (input file {relative})")
            raise JobError(f"id {value!r} of {plan.location.uri_of(path)} row {row} is already in the table, in {where}; "
                           "ids must be unique across the input: fix the new file, or pass --overwrite to redo the table")


def _values_in(plan: InputPlan, output: Location, relative: str, part: str, listed: InputFile | None,
               wanted: np.ndarray) -> set[str]:
    """The ids of a kept unit whose hash is in ``wanted``: read from its input file where it is listed, else its part."""
    if listed is not None:
        return set(places_of(plan.location, [(listed.path, listed.rows)], plan.id_column, plan.ids_as_text, wanted))
    return {value for _, value in ids_hashed_to(output, part, wanted, plan.ids_as_text)}
