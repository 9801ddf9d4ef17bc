"""The built-in sample: what ``python -m runners.ray_job`` runs with no ``--input``.

48 synthetic photo-sized JPEGs and two bad rows on purpose (a truncated JPEG and bytes that
are no image), so a first run shows both sides of the output contract.
"""

from __future__ import annotations

import tempfile

from job.sample.synthetic import Row, synthetic_rows, write_dataset
from storage import resolve

SAMPLE_IMAGES = 48
SAMPLE_SIZE = (640, 480)


def sample_rows() -> list[Row]:
    rows = list(synthetic_rows(SAMPLE_IMAGES, "jpeg", SAMPLE_SIZE, seed=0))
    truncated = rows[0][1][: len(rows[0][1]) // 3]
    return [*rows, ("bad-truncated-jpeg", truncated), ("bad-not-an-image", b"this is not an image")]


def write_sample(directory: str | None = None) -> str:
    """Write the sample under ``directory`` (None: a new temp dir); returns its path, the run's ``--input``."""
    directory = directory or tempfile.mkdtemp(prefix="sample-input-")
    write_dataset(resolve(directory), iter(sample_rows()), rows_per_file=25)
    return directory
