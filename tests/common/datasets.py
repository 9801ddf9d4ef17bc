"""Small real Parquet image datasets for integration tests, written where a test asks."""

from __future__ import annotations

from job.sample.synthetic import synthetic_rows, write_dataset
from storage import resolve
from tests.common.images import bad_images, odd_images

# The words each bad row's error must contain.
BAD_REASONS = {
    "empty": "empty image",
    "not-an-image": "not a recognised image format",
    "truncated-jpeg": "truncated",
    "corrupt-jpeg-header": "undecodable",
    "png-bomb": "decompression bomb",
}


def mixed_rows(good: int = 6) -> list[tuple[str, bytes]]:
    """Synthetic JPEGs, every odd-but-valid image, and every bad one."""
    rows = list(synthetic_rows(good, "jpeg", (320, 240), seed=1))
    rows += [(f"odd-{name}", data) for name, data in odd_images().items() if name != "large-jpeg"]
    rows += [(f"bad-{name}", data) for name, data in bad_images().items()]
    return rows


def write_mixed(uri: str, endpoint: str | None = None, rows_per_file: int = 9) -> tuple[list[str], dict[str, str]]:
    """Write the mixed dataset; returns (all ids, {bad id: reason word})."""
    rows = mixed_rows()
    write_dataset(resolve(uri, endpoint), iter(rows), rows_per_file)
    return [i for i, _ in rows], {f"bad-{name}": reason for name, reason in BAD_REASONS.items()}
