"""A new model rolled out night by night: which files a night re-scores, and how far the rollout has come.

Teams ship a new model every few weeks; re-scoring a table of a hundred million images in one job stops the nightly
for hours. With ``--incremental --rollout-files N`` a night whose options (``job.night.options``) differ from those
that made some of the table's files scores every new or changed file with tonight's, and re-scores at most N of the
files an older set of options made, the oldest first (by the run that made them, then by name: the same files on a
night run again after a kill). On a shared table, a file whose rows another writer took out (a privacy DELETE by
source) is never scored again for a rollout: all of them gone, it counts as rolled out; some, it stays as it is. Each such file's new part is named by tonight's options (``job.output.parts``), so a
killed night's parts are adopted by the next, and its old rows leave as a replaced file's do; one commit a night.
When no file is left on another set, the table is the new model's, and nights are plain incremental nights again.
A rollback is a rollout of the old model.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from job.night.record import TableFile


@dataclass(frozen=True)
class Choice:
    """What a rollout's night does with the files on another model than tonight's."""

    picked: tuple[str, ...] = ()  # re-scored tonight: the oldest, within the budget
    # Every row of it taken out of a shared table by another writer (a DELETE by source): on tonight's model with
    # nothing to score, as scoring it would bring the rows back.
    taken_out: tuple[str, ...] = ()
    kept_back: tuple[str, ...] = ()  # some of its rows taken out by another writer: left as it is, for the same reason


def choose(candidates: Mapping[str, TableFile], budget: int,
           rows_in_table: Callable[[list[str]], Mapping[str, int]] | None = None) -> Choice:
    """Of the input files on another model (``candidates``: their table entries, by name), the ``budget`` oldest whose
    rows the table still holds whole (``rows_in_table``: a shared table's count of them; None: the plain folder, which
    no one else writes), asked a budget's worth at a time, and those it meets whose rows another writer took out."""
    order = sorted(candidates, key=lambda name: (candidates[name].made_in, name))
    picked: list[str] = []
    taken_out: list[str] = []
    kept_back: list[str] = []
    position = 0
    while len(picked) < budget and position < len(order):
        batch = order[position : position + budget - len(picked)]
        position += len(batch)
        present = rows_in_table(batch) if rows_in_table is not None else {}
        for name in batch:
            rows = present.get(name, candidates[name].rows)
            (picked if rows == candidates[name].rows else taken_out if rows == 0 else kept_back).append(name)
    return Choice(tuple(picked), tuple(taken_out), tuple(kept_back))


@dataclass(frozen=True)
class Rollout:
    """How far the table is from tonight's model, after the night: what each model's rows are, and what is left."""

    target: str  # the key of tonight's options
    labels: Mapping[str, str]  # key -> the model it names (as the rows' ``model`` column does)
    files: Mapping[str, int]  # key -> input files on it after the night
    images: Mapping[str, int]  # key -> rows on it after the night
    rescored: int  # files this night moved from another model to tonight's
    per_night: int | None  # --rollout-files

    @property
    def left_files(self) -> int:
        return sum(count for key, count in self.files.items() if key != self.target)

    @property
    def left_images(self) -> int:
        return sum(count for key, count in self.images.items() if key != self.target)

    @property
    def nights_to_go(self) -> int | None:
        """Nights left at this night's rate (None: none was re-scored tonight, so no rate yet)."""
        return math.ceil(self.left_files / self.rescored) if self.rescored else (0 if not self.left_files else None)

    def to_dict(self) -> dict:
        """As the manifest records it."""
        return {"model": self.labels[self.target], "per_night": self.per_night, "rescored": self.rescored,
                "models": {self.labels[key]: {"files": self.files[key], "images": self.images.get(key, 0)}
                           for key in sorted(self.files, key=lambda k: k != self.target)},
                "left": {"files": self.left_files, "images": self.left_images}, "nights_to_go": self.nights_to_go}


def rollout_line(record: dict) -> str:
    """A manifest's ``rollout`` in one line: ``rollout: 8 of 24 files (24 of 72 images) on <model>; 16 files (48
    images) on <other>; 6 nights to go at 3 files a night`` (or ``rollout: done, ...``)."""
    models = record["models"]
    target, total_files = record["model"], sum(m["files"] for m in models.values())
    total_images = sum(m["images"] for m in models.values())
    on = (f"{models[target]['files']} of {total_files} files ({models[target]['images']} of {total_images} images) "
          f"on {target}")
    if not record["left"]["files"]:
        return f"rollout: done, {on}"
    others = "; ".join(f"{m['files']} files ({m['images']} images) on {name}" for name, m in models.items() if name != target)
    nights = record["nights_to_go"]
    pace = (f"{nights} night{'s' if nights != 1 else ''} to go at {record['rescored']} files a night" if nights is not None
            else "no file re-scored tonight")
    return f"rollout: {on}; {others}; {pace}"
