"""Read a job's embedding column and hold it against other embeddings of the same images.

A seeded or random network's pooled features share most of their direction (two different
photos at cosine 0.9996), so a raw cosine cannot tell a row from its neighbour. What tells
images apart is each feature's difference from the mean: ``assert_same_features`` compares
that, and requires each row to be nearest its own image's feature, not another's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tests.common.contract import read_output


def embeddings_of(output: Path | str, dtype: pa.DataType = pa.float32()) -> dict[str, np.ndarray]:
    """{id: embedding as float32} of a finished output's rows that have one; checks the column's type."""
    files = [Path(output) / name for name in read_output(str(output))[1]["files"]]
    table = pq.read_table(files, columns=["id", "embedding"])
    kind = table.schema.field("embedding").type
    assert (kind.value_type, kind.list_size) == (dtype, 2048), kind  # a fixed-size list of the chosen dtype
    return {row["id"]: np.asarray(row["embedding"], np.float32) for row in table.to_pylist() if row["embedding"] is not None}


def assert_same_features(got: dict[str, np.ndarray], expected: dict[str, np.ndarray], min_cosine: float = 0.999) -> None:
    """Raw cosine >= 0.999 row by row; from the expected features' mean, cosine >= ``min_cosine`` and no other row nearer."""
    assert got.keys() == expected.keys()
    ids = sorted(expected)
    mine, theirs = np.stack([got[i] for i in ids]), np.stack([expected[i] for i in ids])
    raw = np.sum(_unit(mine) * _unit(theirs), axis=1)
    assert raw.min() >= 0.999, dict(zip(ids, raw))
    centre = theirs.mean(axis=0)
    cosines = _unit(mine - centre) @ _unit(theirs - centre).T  # (images, images)
    assert np.diag(cosines).min() >= min_cosine, dict(zip(ids, np.diag(cosines)))
    # Nearest its own image's feature; a tie is an image whose pixels equal another's (the same photo as PNG and WebP).
    assert (np.diag(cosines) >= cosines.max(axis=1) - 1e-4).all(), cosines


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)
