"""64-bit hashes of an Arrow id column, vectorised in numpy: the id check's memory is 8 bytes an id.

``id_hashes(array, as_text)`` gives one uint64 per row and the rows' validity. Equal ids give
equal hashes, so two rows with different hashes hold different ids; rows with equal hashes
are compared by value afterwards (``job.input.unique_ids``), so a collision costs a re-read, never a
wrong answer. Integer ids hash to their own value. Text ids are laid out as a zero-padded
matrix, one row an id, and taken 8 bytes at a time: each word is mixed with its position by
splitmix64 and the mixes summed, plus a mix of the length; two different ids collide with a
probability of about 2^-64. The matrix is as wide as the longest id of a record batch.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_LENGTH_SEED = np.uint64(0xD6E8FEB86659FD93)  # keeps "a" and "a\0" apart: the length is hashed too
# _OWN_BYTES[k]: a uint64 mask of a word's first k bytes (in memory order, whatever the byte order).
_OWN_BYTES = np.frombuffer(b"".join(bytes([255] * k + [0] * (8 - k)) for k in range(9)), dtype=np.uint64)


def id_hashes(array: pa.Array, as_text: bool) -> tuple[np.ndarray, np.ndarray]:
    """(uint64 hash per row, bool validity per row) of an id column chunk.

    ``as_text``: hash the ids' text (what the output holds: an integer 7 and a string "7" are the
    same id); otherwise the column is integers and hashes to its values.
    """
    if isinstance(array, pa.DictionaryArray):
        array = array.dictionary_decode()
    valid = array.is_valid().to_numpy(zero_copy_only=False)
    if not as_text:
        integers = array.fill_null(0).cast(pa.uint64() if pa.types.is_unsigned_integer(array.type) else pa.int64())
        return integers.to_numpy().view(np.uint64), valid
    if not pa.types.is_large_string(array.type):
        array = array.cast(pa.large_string())  # one layout (int64 offsets) for string, string_view, integers
    return _text_hashes(array), valid


def _text_hashes(array: pa.LargeStringArray) -> np.ndarray:
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset : array.offset + len(array) + 1]
    data = array.buffers()[2]
    text = np.frombuffer(data, dtype=np.uint8)[offsets[0] : offsets[-1]] if data is not None else np.empty(0, np.uint8)
    starts, lengths = offsets[:-1] - offsets[0], np.diff(offsets)
    hashes = splitmix64(lengths.astype(np.uint64) ^ _LENGTH_SEED)
    width = -(-int(lengths.max()) // 8) * 8 if len(lengths) else 0
    if width == 0:
        return hashes
    # Row i: the `width` bytes from id i's start: a zero-copy window view, then one gather of rows.
    windows = np.lib.stride_tricks.sliding_window_view(np.concatenate([text, np.zeros(width, np.uint8)]), width)
    words = windows[starts].view(np.uint64)  # (ids, width / 8), native byte order: hashes never leave the process
    for column in range(words.shape[1]):
        # Keep only the id's own bytes of this word: those past its end are its neighbour's.
        own = _OWN_BYTES[np.clip(lengths - 8 * column, 0, 8)]
        hashes += splitmix64((words[:, column] & own) ^ splitmix64(np.full(1, column, np.uint64)))
    return hashes


def splitmix64(values: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a fixed, well-mixed 64-bit function of each value (wraps mod 2^64)."""
    z = values + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def repeated(hashes: np.ndarray) -> tuple[np.ndarray, int]:
    """(hash values held more than once, rows too many) of ``hashes``: the ids to confirm by value.

    Sorts a copy; 8 bytes an id.
    """
    ordered = np.sort(hashes)
    twice = ordered[1:] == ordered[:-1]
    return np.unique(ordered[1:][twice]), int(twice.sum())
