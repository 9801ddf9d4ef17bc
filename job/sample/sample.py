"""The built-in sample: what ``python -m runners.ray_job`` runs with no ``--input``.

48 synthetic photo-sized JPEGs and two bad rows on purpose (a truncated JPEG and bytes that
are no image), so a first run shows both sides of the output contract. Made once per version of
the code that makes it (about 2 s of CPU, beside the engine's start) and kept in the temp dir.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import shutil
import sys
import tempfile

from job.sample import synthetic
from job.sample.synthetic import Row, synthetic_rows, write_dataset
from storage import resolve

SAMPLE_IMAGES = 48
SAMPLE_SIZE = (640, 480)


def sample_rows() -> list[Row]:
    rows = list(synthetic_rows(SAMPLE_IMAGES, "jpeg", SAMPLE_SIZE, seed=0))
    truncated = rows[0][1][: len(rows[0][1]) // 3]
    return [*rows, ("bad-truncated-jpeg", truncated), ("bad-not-an-image", b"this is not an image")]


def write_sample(directory: str | None = None) -> str:
    """Write the sample under ``directory``; returns its path, the run's ``--input``.

    None: the sample kept in the temp dir (``sample_dir``), written there first if it is not yet.
    """
    if directory is None:
        return _kept_sample()
    write_dataset(resolve(directory), iter(sample_rows()), rows_per_file=25)
    return directory


def sample_dir() -> str:
    """Where the sample is kept: named by the code that makes it, so a changed generator makes a new one."""
    code = inspect.getsource(synthetic) + inspect.getsource(sys.modules[__name__])
    return os.path.join(tempfile.gettempdir(), f"sample-input-{hashlib.sha1(code.encode()).hexdigest()[:12]}")


def _kept_sample() -> str:
    final = sample_dir()
    if os.path.isdir(final):
        return final
    # Written aside, then renamed into place in one step: a folder under the final name is always whole,
    # and of two runs making it at once, one rename wins and the other's copy is dropped.
    staging = tempfile.mkdtemp(prefix="sample-input-staging-")
    write_sample(staging)
    try:
        os.rename(staging, final)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not os.path.isdir(final):
            raise
    return final
