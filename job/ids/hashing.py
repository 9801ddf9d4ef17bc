"""An id's 64-bit hash: what the input's id check, the table's ids index and the final check compare ids by.

Vectorised in numpy: ``id_hashes(array, as_text)`` gives one uint64 per row and the rows' validity.
Equal ids give equal hashes, so two rows with different hashes hold different ids; rows with equal
hashes are compared by value afterwards (the input's check, ``job.input.unique_ids``; the final check,
``job.night.check``), so a collision costs a re-read, never a wrong answer. Integer ids hash to their own
value. Text ids are laid out as a zero-padded matrix, one row an id, and taken 8 bytes at a time: each
word is mixed with its position by splitmix64 and the mixes summed, plus a mix of the length; two
different ids collide with a probability of about 2^-64. The matrix is as wide as the longest id of a
record batch. ``part_hashes`` hashes a committed part's ids as its input's were typed.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# Small files whose ids a thread hashes in one call: hashing 4 ids costs what hashing 20,000 does (0.15 ms of numpy's
# fixed cost a call, as much as reading the file), so a million small files paid it a million times.
FILES_HASHED_TOGETHER = 64


def ids_digest(hashes: np.ndarray) -> int:
    """One number for a set of ids, whatever their order: the sum of their hashes (mod 2^64).

    Two files' ids (or a part's and its input file's) with equal digests hold the same ids, but
    for a chance of about 2^-64.
    """
    return int(np.add.reduce(hashes, dtype=np.uint64)) if len(hashes) else 0


def hashed_together(arrays: list[pa.Array], as_text: bool) -> list[tuple[np.ndarray, np.ndarray]]:
    """``id_hashes`` of each array, in one call where they share a plain type: the same hashes (an id's hash is
    its own), at one call's fixed cost, which is most of what hashing a file (or a part) of a few ids costs."""
    if len(arrays) > 1 and len({a.type for a in arrays}) == 1 and not pa.types.is_dictionary(arrays[0].type):
        values, valid = id_hashes(pa.concat_arrays(arrays), as_text)
        bounds = np.cumsum([0, *(len(a) for a in arrays)])
        return [(values[s:e], valid[s:e]) for s, e in zip(bounds[:-1], bounds[1:])]
    return [id_hashes(array, as_text) for array in arrays]


# The id hash's version, recorded with every ids index (job.ids.index.write_index): version 1 added a term for
# each word of the longest id in the batch, so the same short id hashed differently beside a longer one and a repeat
# across files could go unseen; an index of another version is remade from its parts (job.ids.index).
ID_HASH_VERSION = 2
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
        left = lengths - 8 * column  # the id's bytes from this word on
        # Keep only the id's own bytes of this word (those past its end are its neighbour's), and add a word only
        # where the id has one: a hash must not depend on the longest id beside it in the batch.
        own = _OWN_BYTES[np.clip(left, 0, 8)]
        mixed = splitmix64((words[:, column] & own) ^ splitmix64(np.full(1, column, np.uint64)))
        hashes += np.where(left > 0, mixed, np.uint64(0))
    return hashes


def splitmix64(values: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a fixed, well-mixed 64-bit function of each value (wraps mod 2^64)."""
    z = values + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def repeated(hashes: np.ndarray, own: bool = False) -> tuple[np.ndarray, int]:
    """(hash values held more than once, rows too many) of ``hashes``: the ids to confirm by value.

    Sorts a copy, 8 bytes an id; ``own``: ``hashes`` is the caller's own copy, sorted in place.
    """
    ordered = hashes if own else hashes.copy()
    ordered.sort()
    twice = ordered[1:] == ordered[:-1]
    return np.unique(ordered[1:][twice]), int(twice.sum())


def part_hashes(ids: pa.Array | pa.ChunkedArray, ids_as_text: bool) -> np.ndarray:
    """A part's ids hashed as its input's were: integer ids (written as text) are hashed as the numbers."""
    return id_hashes(as_input_ids(ids, ids_as_text), ids_as_text)[0]


def as_input_ids(ids: pa.Array | pa.ChunkedArray, ids_as_text: bool) -> pa.Array:
    """A part's id column as its input's ids were typed: text, or (written as text) the integers."""
    array = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
    if not ids_as_text:
        try:
            array = pc.cast(array, pa.int64())
        except pa.ArrowInvalid:  # past int64: the input's ids were uint64
            array = pc.cast(array, pa.uint64())
    return array
