"""Image objects read as they lie: a prefix of JPEG/PNG/WebP/... files (S3 or a local folder) as input.

``is_image_prefix`` tells such a prefix from a Parquet one by the names in the listing, the only
thing known before any read: an object named ``*.jpg``, ``*.png``... makes it an image prefix (one
GET per object to sniff magic bytes would cost the planning of 10 million objects hours). In an
image prefix every listed object is an image to the job, whatever its name (keys without an
extension are common in content-addressed buckets): the decoder reads its bytes' signature, and an
object that is no image becomes an error row whose id is its key, as a bad image does in Parquet.
A prefix holding both Parquet files and image files is refused: which rows it means is a guess.

``plan_objects`` cuts the objects into groups (``job.input.object_groups``), each an ``InputFile``
whose ``members`` are its objects: the unit of work and of output every engine already runs,
through ``read_objects``, which ``job.input.plan.read_file`` calls for such a unit. The ids are the
object keys relative to the prefix: unique by construction, so no id check reads anything.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor

import pyarrow as pa

from job.errors import JobError
from job.input.data_files import FileIdentity, input_relpath
from job.input.id_hash import id_hashes
from job.input.object_groups import group_objects
from job.input.unique_ids import ids_digest
from storage import Location

# By name only (see the module docstring): the formats the CPU decoder (Pillow) reads.
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".jpe", ".jfif", ".png", ".webp", ".gif", ".bmp", ".tif", ".tiff")
PARQUET_SUFFIXES = (".parquet", ".parq")
# The largest object read as one image. Photos are a few MB, the largest camera JPEGs and PNGs tens;
# a larger object is a video, an archive or an uncompressed scan, and every reader thread would hold it whole.
MAX_OBJECT_BYTES = 64 * 1024 * 1024
OBJECT_READ_THREADS = 16  # one GET per object: mostly S3 latency, so many in flight per reader
READ_ERROR = "_read_error"  # the record batch's column of objects that could not be read (null: read)


def is_image_name(relative: str) -> bool:
    return relative.lower().endswith(IMAGE_SUFFIXES)


def is_image_prefix(location: Location, listing: Mapping[str, FileIdentity]) -> bool:
    """Whether the listed data files are image objects (see the module docstring); JobError for a mixed prefix."""
    images = next((path for path in listing if is_image_name(input_relpath(location.path, path))), None)
    if images is None:
        return False
    parquet = next((path for path in listing if path.lower().endswith(PARQUET_SUFFIXES)), None)
    if parquet is not None:
        raise JobError(f"{location.uri}: holds both Parquet files ({location.uri_of(parquet)}) and image files "
                       f"({location.uri_of(images)}); point --input at a prefix of one kind: Parquet files, or image objects")
    return True


def object_units(location: Location, listing: Mapping[str, FileIdentity], per_part: int,
                 limit: int | None = None) -> list[tuple[str, tuple[tuple[str, int], ...], FileIdentity, int]]:
    """(path, members, identity, ids digest) of each group of the listed objects; ``limit``: the first objects only.

    ``members``: (path inside the filesystem, size) of each object, in key order.
    """
    paths = sorted(listing)[:limit]  # keys share the prefix: in the paths' order
    keys = [input_relpath(location.path, path) for path in paths]
    identities = [listing[path] for path in paths]
    units = []
    for group in group_objects(keys, identities, per_part):
        members = tuple((path, identity.size) for path, identity in zip(paths[group.start : group.end],
                                                                          identities[group.start : group.end]))
        ids = pa.array(keys[group.start : group.end], pa.large_string())
        units.append((location.join(group.name), members, group.identity, ids_digest(id_hashes(ids, True)[0])))
    return units


def read_objects(location: Location, members: tuple[tuple[str, int], ...], image_column: str,
                 batch_rows: int) -> Iterator[tuple[list[str], pa.RecordBatch]]:
    """Yield (ids, record batch of ``image_column`` and ``READ_ERROR``) for a group's objects, ``batch_rows`` at a time.

    The next batch's objects are fetched while the caller works on this one. An object that cannot
    be read (gone since the plan, over ``MAX_OBJECT_BYTES``, refused by the store) is a row with a
    null image and its ``READ_ERROR``: one object never stops its group.
    """
    chunks = [members[start : start + batch_rows] for start in range(0, len(members), batch_rows)]
    with ThreadPoolExecutor(max_workers=OBJECT_READ_THREADS) as pool:
        def fetch(chunk) -> list[Future]:
            return [pool.submit(_read_object, location, path, size) for path, size in chunk]

        pending = fetch(chunks[0]) if chunks else []
        for index, chunk in enumerate(chunks):
            read, pending = [f.result() for f in pending], fetch(chunks[index + 1]) if index + 1 < len(chunks) else []
            ids = [input_relpath(location.path, path) for path, _ in chunk]
            yield ids, pa.record_batch({image_column: pa.array([data for data, _ in read], pa.binary()),
                                        READ_ERROR: pa.array([error for _, error in read], pa.string())})


def _read_object(location: Location, path: str, size: int) -> tuple[bytes | None, str | None]:
    uri = location.uri_of(path)
    if size > MAX_OBJECT_BYTES:
        return None, (f"object too large: {uri} is {size} bytes, over the {MAX_OBJECT_BYTES} bytes read as one image; "
                      "move it out of --input")
    try:
        with location.filesystem.open_input_stream(path) as f:
            return f.read(), None
    except FileNotFoundError:
        return None, f"object gone: {uri} was deleted after the job planned it; the next --incremental run drops its row"
    except OSError as e:  # after the store's own retries: this object alone is lost, its group goes on
        return None, f"object unreadable: {uri}: {str(e).splitlines()[0]}"
