"""A new model rolled out night by night: which files a night re-scores, and how far the rollout has come.

Teams ship a new model every few weeks; re-scoring a table of a hundred million images in one job stops the nightly
for hours. With ``--incremental --rollout-files N`` a night whose options (``job.night.options``) differ from those
that made some of the table's files scores every new or changed file with tonight's, and re-scores at most N of the
files an older set of options made, the oldest first (by the run that made them, then by name: the same files on a
night run again after a kill). On a shared table, a file whose every row another writer took out (a privacy DELETE by
source) is never scored again for a rollout: it counts as rolled out; one some of whose rows were taken out is
re-scored, and its commit withholds them (``job.night.formats.withheld``). Each re-scored file's new part takes a name
no earlier part had (salted by the run); a killed night's parts are adopted by the next by their footers
(``job.night.strays``), and the old rows leave as a replaced file's do; one commit a night.
When no file is left on another set, the table is the new model's, and nights are plain incremental nights again.
A rollback is a rollout of the old model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from job.night.record import TableFile


@dataclass(frozen=True)
class Choice:
    """What a rollout's night does with the files on another model than tonight's."""

    picked: tuple[str, ...] = ()  # re-scored tonight: the oldest, within the budget
    # Every row of it taken out of a shared table by another writer (a DELETE by source): on tonight's model with
    # nothing to score, as scoring it would bring the rows back.
    taken_out: tuple[str, ...] = ()


def choose(candidates: Mapping[str, TableFile], budget: int, present: Mapping[str, int] | None = None) -> Choice:
    """Of the input files on another model (``candidates``: their table entries, by name), the ``budget`` oldest that
    the table holds rows of (``present``: a shared table's count of them now; None: the plain folder, which no one
    else writes). A file some of whose rows another writer deleted is picked all the same: its commit withholds them
    (``job.night.formats.withheld``)."""
    order = sorted(candidates, key=lambda name: (candidates[name].made_in, name))
    taken_out = tuple(name for name in order if present is not None and present.get(name, 1) == 0)
    picked = tuple(name for name in order if name not in taken_out)[:budget]
    return Choice(picked, taken_out)


@dataclass(frozen=True)
class Rollout:
    """How far the table is from tonight's model, after the night: what each model's rows are, and what is left. Counted
    from the table as it is: rows another writer deleted are out, and a file with no row left is no file of it."""

    target: str  # the key of tonight's options
    labels: Mapping[str, str]  # key -> the model it names (as the rows' ``model`` column does)
    files: Mapping[str, int]  # key -> input files on it after the night
    images: Mapping[str, int]  # key -> rows on it after the night
    rescored: int  # files this night moved from another model to tonight's
    per_night: int | None  # --rollout-files
    # Files kept by --keep-removed on another model: their input is gone, so nothing can re-score them.
    stranded: int = 0
    stranded_images: int = 0
    window: str | None = None  # --rollout-time: what the window chose tonight, and why

    @classmethod
    def of_table(cls, entries: Mapping[str, TableFile], target: str, labels: Mapping[str, str], rescored: int,
                 per_night: int | None, window: str | None = None) -> Rollout:
        """The rollout's state from the table's entries after the night (``made_by`` None: ``target``'s)."""
        files: dict[str, int] = {}
        images: dict[str, int] = {}
        stranded = stranded_images = 0
        for entry in entries.values():
            key, rows = entry.made_by or target, entry.rows - entry.taken
            if rows <= 0 and entry.rows > 0:
                continue  # every row deleted by another writer: no file of the table now
            if entry.removed and key != target:
                stranded, stranded_images = stranded + 1, stranded_images + rows
                continue
            files[key], images[key] = files.get(key, 0) + 1, images.get(key, 0) + rows
        files.setdefault(target, 0)
        return cls(target, labels, files, images, rescored, per_night, stranded, stranded_images, window)

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
        record = {"model": self.labels[self.target], "per_night": self.per_night, "rescored": self.rescored,
                  "models": {self.labels[key]: {"files": self.files[key], "images": self.images.get(key, 0)}
                             for key in sorted(self.files, key=lambda k: k != self.target)},
                  "left": {"files": self.left_files, "images": self.left_images}, "nights_to_go": self.nights_to_go}
        if self.stranded:
            record["stranded"] = {"files": self.stranded, "images": self.stranded_images}
        if self.window is not None:
            record["window"] = self.window
        return record


def rollout_line(record: dict) -> str:
    """A manifest's ``rollout`` in one line: ``rollout: 8 of 24 files (24 of 72 images) on <model>; 16 files (48
    images) on <other>; 6 nights to go at 3 files a night`` (or ``rollout: done, ...``)."""
    models = record["models"]
    target, total_files = record["model"], sum(m["files"] for m in models.values())
    total_images = sum(m["images"] for m in models.values())
    on = (f"{_count(models[target]['files'], 'file')} of {total_files} ({models[target]['images']} of {total_images} "
          f"images) on {target}")
    stranded = record.get("stranded")
    kept = (f"; {_count(stranded['files'], 'file')} ({stranded['images']} images) kept by --keep-removed stay on their "
            "model: their input is gone, nothing can re-score them") if stranded else ""
    window = f"; --rollout-time: {record['window']}" if record.get("window") else ""
    if not record["left"]["files"]:
        return f"rollout: done, {on}{kept}{window}"
    others = "; ".join(f"{_count(m['files'], 'file')} ({m['images']} images) on {name}" for name, m in models.items()
                       if name != target)
    nights = record["nights_to_go"]
    pace = (f"{_count(nights, 'night')} to go at {_count(record['rescored'], 'file')} a night" if nights is not None
            else "no file re-scored tonight")
    return f"rollout: {on}; {others}; {pace}{kept}{window}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
