"""A folder of image files, as Ray Data's ``read_images``/``read_binary_files`` and Spark's ``binaryFile``/``image``
sources read them: sizes and modes differ (a variable-shape tensor, an alpha channel to drop)."""

from __future__ import annotations

from pathlib import Path

from tests.common.images import encoded, photo

IMAGE_FILES = {
    "photo.jpg": lambda: encoded(photo(64, 48)),
    "square.png": lambda: encoded(photo(40, 40, seed=1), "PNG"),
    "alpha.png": lambda: encoded(photo(48, 32, seed=2).convert("RGBA"), "PNG"),
}


def write_image_files(folder: Path) -> list[str]:
    """The files' names, written into ``folder`` (made)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, make in IMAGE_FILES.items():
        (folder / name).write_bytes(make())
    return sorted(IMAGE_FILES)
