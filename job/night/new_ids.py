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


def check_new_ids(plan: InputPlan, new: list[InputFile], output: Location, index: IdIndex, kept: Mapping[str, str]) -> None:
    """Refuse (one line) a new file's id that a kept part already holds.

    ``kept``: the kept parts by their input file (path relative to --input); ``index``: the table's.
    """
    if plan.id_column is None or not new or not kept:
        return  # positional ids are "<path relative to --input>:<row>": unique by construction
    fresh = hashes_of(plan.location, [(f.path, f.rows) for f in new], plan.id_column, plan.ids_as_text)
    old = index.held(fresh, kept)  # only the kept parts holding a new hash, and those hashes
    if not old:
        return
    repeated = np.unique(np.concatenate(list(old.values())))
    new_places = places_of(plan.location, [(f.path, f.rows) for f in new], plan.id_column, plan.ids_as_text, repeated)
    for relative in old:
        held = {value for _, value in ids_hashed_to(output, kept[relative], repeated, plan.ids_as_text)} & set(new_places)
        if held:
            value = sorted(held)[0]
            path, row = new_places[value][0]
            raise JobError(f"id {value!r} of {plan.location.uri_of(path)} row {row} is already in the table, in "
                           f"{output.uri_of(output.join(kept[relative]))} (input file {relative}); ids must be unique "
                           "across the input: fix the new file, or pass --overwrite to redo the table")
