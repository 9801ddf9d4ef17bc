"""A Hugging Face model's folder on this machine: the folder itself, or a copy of an S3 folder's files, once per process.

Use ``on_this_machine`` before transformers reads a folder (it reads local paths only) and ``read_json`` for its
``config.json`` and ``preprocessor_config.json``. Torch-free; storage problems are one ``WeightsError`` line.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile

from pyarrow.fs import FileType

from inference.errors import WeightsError
from storage import Location, StorageError, redact, resolve, storage_errors

CONFIG, WEIGHTS, PROCESSOR = "config.json", "model.safetensors", "preprocessor_config.json"
FILES = (CONFIG, WEIGHTS, PROCESSOR)  # what a folder gives us; anything else in it is not read
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
    local = tempfile.mkdtemp(prefix="hf-model-")
    try:
        location = resolve(folder, s3_endpoint_url)
        for name in FILES if need_weights else (CONFIG, PROCESSOR):
            with storage_errors(location.uri_of(location.join(name))):
                if location.filesystem.get_file_info(location.join(name)).type == FileType.NotFound:
                    continue  # absent: the reader of that file names it
                _download(location, name, os.path.join(local, name))
    except StorageError as e:
        raise WeightsError(f"cannot read hf:{redact(folder)}: {e}; check the folder and the S3 endpoint") from e
    return local


def _download(location: Location, name: str, target: str) -> None:
    with location.filesystem.open_input_stream(location.join(name)) as source, open(target, "wb") as out:
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
