"""A Hugging Face model's folder on this machine: the folder itself, or a copy of an S3 folder's files, once per process.

Use ``on_this_machine`` before transformers reads a folder (it reads local paths only) and ``read_json`` for its
``config.json``. An S3 folder's copy holds its config, its image processor and its weights in whichever layout the
folder has (``inference.hf_weights``: one file, or an index and every shard it names). ``transformers_quiet`` keeps
transformers' load reports and progress bars out of the user's terminal. Torch-free; storage problems are one
``WeightsError`` line.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from pyarrow.fs import FileType

from inference.errors import WeightsError
from inference.hf_weights import weight_files
from storage import Location, StorageError, redact, resolve, storage_errors

CONFIG, PROCESSOR = "config.json", "preprocessor_config.json"
CHUNK = 16 * 1024 * 1024


def on_this_machine(folder: str, s3_endpoint_url: str | None, need_weights: bool) -> str:
    """A local folder holding the model's files: ``folder`` itself, or a copy of an S3 folder's (once per process)."""
    if not folder.startswith("s3://"):
        if not os.path.isdir(folder):
            raise WeightsError(f"hf:{folder}: no such folder; pass hf: and a folder written by save_pretrained")
        return folder
    return _copied(folder, s3_endpoint_url, need_weights)


@functools.lru_cache(maxsize=2)
def _copied(folder: str, s3_endpoint_url: str | None, need_weights: bool) -> str:
    local, shown = tempfile.mkdtemp(prefix="hf-model-"), f"hf:{redact(folder)}"
    try:
        location = resolve(folder, s3_endpoint_url)
        present = functools.partial(_present, location)
        names = [name for name in (CONFIG, PROCESSOR) if present(name)]  # one absent: its reader names it
        if need_weights and present(CONFIG):
            names += weight_files(present, functools.partial(_bytes, location), shown)
        for name in names:
            _download(location, name, os.path.join(local, name))
    except StorageError as e:
        raise WeightsError(f"cannot read {shown}: {e}; check the folder and the S3 endpoint") from e
    return local


def _present(location: Location, name: str) -> bool:
    with storage_errors(location.uri_of(location.join(name))):
        return location.filesystem.get_file_info(location.join(name)).type != FileType.NotFound


def _bytes(location: Location, name: str) -> bytes:
    path = location.join(name)
    with storage_errors(location.uri_of(path)), location.filesystem.open_input_stream(path) as f:
        return f.read()


def _download(location: Location, name: str, target: str) -> None:
    with storage_errors(location.uri_of(location.join(name))), \
            location.filesystem.open_input_stream(location.join(name)) as source, open(target, "wb") as out:
        while chunk := source.read(CHUNK):
            out.write(chunk)


def read_json(local: str, name: str, shown: str, fix: str) -> dict:
    """The folder's ``name`` as a dict; WeightsError naming ``fix`` when it is absent or not JSON."""
    path = os.path.join(local, name)
    if not os.path.exists(path):
        raise WeightsError(f"{shown}: no {name} in the folder; {fix}")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise WeightsError(f"{shown}: its {name} is not readable JSON ({e}); {fix}") from e


@contextmanager
def transformers_quiet() -> Iterator[None]:
    """transformers' load report and progress bars kept out of the user's terminal while it reads a folder."""
    from transformers.utils import logging

    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
        logging.enable_progress_bar()
