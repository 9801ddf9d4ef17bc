"""The id hashes of many files (or parts) in one array: what the final check hands the ids index.

Use ``HashesByFile`` where the ids of a run's files travel together: the final check
(``job.night.check``) makes one of the parts it read, and the ids index's next segment
(``job.ids.segment``) is made from it with the parts renamed to their input files. One array
of hashes and one of sizes, not a numpy array per file: a million files of 4 ids held as a million
arrays (views of the arrays their reads hashed) cost about 300 bytes a file in array headers and
dict entries; held here, 40.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class HashesByFile:
    """File ``names[i]``'s id hashes are the ``sizes[i]`` of ``flat`` after those of the files before it; names are
    unique."""

    names: tuple[str, ...]
    sizes: np.ndarray  # int64, one per name
    flat: np.ndarray  # uint64: every file's hashes, file after file

    def __post_init__(self) -> None:
        if len(self.sizes) != len(self.names) or int(self.sizes.sum()) != len(self.flat):
            raise ValueError(f"{len(self.names)} names, {len(self.sizes)} sizes summing to {int(self.sizes.sum())} "
                             f"for {len(self.flat)} hashes: they must agree")

    @classmethod
    def of(cls, hashes: Mapping[str, np.ndarray]) -> HashesByFile:
        """From {file: its hashes}."""
        return cls.joined(list(hashes), [hashes[name] for name in hashes])

    @classmethod
    def joined(cls, names: Sequence[str], arrays: Sequence[np.ndarray]) -> HashesByFile:
        """From each name's array of hashes."""
        flat = np.concatenate(arrays).astype(np.uint64, copy=False) if arrays else np.empty(0, np.uint64)
        return cls(tuple(names), np.fromiter((len(a) for a in arrays), np.int64, len(arrays)), flat)

    @classmethod
    def concatenated(cls, pieces: Sequence[HashesByFile]) -> HashesByFile:
        """These (of different names) one after another; none: no file."""
        if len(pieces) == 1:
            return pieces[0]
        if not pieces:
            return cls((), np.empty(0, np.int64), np.empty(0, np.uint64))
        names = tuple(name for piece in pieces for name in piece.names)
        return cls(names, np.concatenate([p.sizes for p in pieces]).astype(np.int64, copy=False),
                   np.concatenate([p.flat for p in pieces]).astype(np.uint64, copy=False))

    def __len__(self) -> int:
        return len(self.names)

    def owners(self) -> np.ndarray:
        """int32, one per hash: the number of the file holding it."""
        return np.repeat(np.arange(len(self.names), dtype=np.int32), self.sizes)

    def renamed(self, names: Sequence[str]) -> HashesByFile:
        """The same hashes, file ``i`` named ``names[i]`` (the final check's parts named by their input files)."""
        return HashesByFile(tuple(names), self.sizes, self.flat)
