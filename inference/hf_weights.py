"""A Hugging Face folder's weights in every layout ``save_pretrained`` writes: found, checked and counted before
transformers reads them.

Use ``weight_files`` to list what a folder's weights are (an S3 folder's copy fetches exactly those), then
``checked_weights`` on the local folder before the model is built: every file is checked (an empty, cut-short or
damaged file, a shard its index names that is not there: one ``WeightsError`` line, where transformers would raise
a library's traceback) and its parameters counted from the files' headers, without loading them, for the memory
check (``inference.memory``). Layouts, in transformers' order of preference: ``model.safetensors``; sharded
safetensors (``model.safetensors.index.json`` and the shards its ``weight_map`` names, as every model over
``max_shard_size`` is published); ``pytorch_model.bin`` and its sharded form, where no safetensors are.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from inference.errors import WeightsError
from inference.files import sha256_of

SAFETENSORS, SAFETENSORS_INDEX = "model.safetensors", "model.safetensors.index.json"
BIN, BIN_INDEX = "pytorch_model.bin", "pytorch_model.bin.index.json"
LAYOUTS = (SAFETENSORS, SAFETENSORS_INDEX, BIN, BIN_INDEX)  # transformers' order: the first the folder holds is read
FIX = "save the model again with save_pretrained"
HEADER = 8  # a safetensors file starts with its JSON header's length: 8 bytes, little-endian
DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
               "F8_E4M3": 1, "F8_E5M2": 1, "U16": 2, "U32": 4, "U64": 8}


@dataclass(frozen=True)
class Weights:
    files: list[str]  # the folder's weight files, the index first when sharded
    parameters: int  # how many numbers they hold
    sha256: str  # one file's digest; of a sharded folder, the digest of each file's name and digest


def weight_files(present: Callable[[str], bool], read: Callable[[str], bytes], shown: str) -> list[str]:
    """The files of the first layout a folder holds (``present(name)``, ``read(name)`` its bytes): one file, or an
    index and the shards it names; WeightsError when it holds none."""
    layout = next((name for name in LAYOUTS if present(name)), None)
    if layout is None:
        raise WeightsError(f"{shown}: no weights in the folder ({', '.join(LAYOUTS)}); save the model with "
                           "save_pretrained, or pass --weights random")
    if not layout.endswith(".index.json"):
        return [layout]
    return [layout, *_shards(read(layout), layout, shown)]


def checked_weights(local: str, shown: str) -> Weights:
    """The local folder's weight files, each checked, with their parameters counted and their digest."""
    files = weight_files(lambda name: os.path.exists(os.path.join(local, name)),
                         lambda name: _read(os.path.join(local, name)), shown)
    for name in files[1:]:
        if not os.path.exists(os.path.join(local, name)):
            raise WeightsError(f"{shown}: its {files[0]} names {name}, which is not in the folder; copy every shard, "
                               f"or {FIX}")
    tensors = [name for name in files if not name.endswith(".index.json")]
    parameters = sum(_count(os.path.join(local, name), f"{shown}: its {name}") for name in tensors)
    return Weights(files, parameters, _digest(local, files))


def _shards(data: bytes, layout: str, shown: str) -> list[str]:
    try:
        shards = sorted(set(json.loads(data)["weight_map"].values()))
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise WeightsError(f"{shown}: its {layout} is not an index of shards (a weight_map): {e}; {FIX}") from e
    beside = [name for name in shards
              if not isinstance(name, str) or os.path.basename(name) != name or name in ("", ".", "..")]
    if beside:
        raise WeightsError(f"{shown}: its {layout} names {beside[0]!r}, not a file beside it; {FIX}")
    return shards


def _count(path: str, shown: str) -> int:
    size = os.path.getsize(path)
    if size == 0:
        raise WeightsError(f"{shown} is empty (0 bytes); {FIX}")
    return _safetensors_count(path, size, shown) if path.endswith(".safetensors") else _torch_count(path, shown)


def _safetensors_count(path: str, size: int, shown: str) -> int:
    """The parameters a safetensors file's header declares, each tensor's bytes checked against the file's length."""
    with open(path, "rb") as f:
        start = f.read(HEADER)
        length = struct.unpack("<Q", start)[0] if len(start) == HEADER else None
        if length is None or length > size - HEADER:
            raise WeightsError(f"{shown} is cut short or not a safetensors file ({size} bytes); {FIX}")
        try:
            header = json.loads(f.read(length))
        except ValueError as e:
            raise WeightsError(f"{shown} is not a safetensors file (its header is not JSON: {e}); {FIX}") from e
    data, count = size - HEADER - length, 0
    for name, tensor in header.items():
        if name == "__metadata__":
            continue
        try:
            numel, (begin, end) = math.prod(tensor["shape"]), tensor["data_offsets"]
            width = DTYPE_BYTES.get(tensor["dtype"])
        except (KeyError, TypeError, ValueError) as e:
            raise WeightsError(f"{shown} is damaged (its header's entry for {name} is {tensor!r}); {FIX}") from e
        if not 0 <= begin <= end <= data or (width is not None and end - begin != numel * width):
            raise WeightsError(f"{shown} is cut short or damaged ({name}'s bytes {begin}..{end} of {data}); {FIX}")
        count += numel
    return count


def _torch_count(path: str, shown: str) -> int:
    """The parameters a ``torch.save`` file holds, mapped (not read) into memory, weights only."""
    import torch

    try:
        state = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
    except Exception as e:  # torch raises RuntimeError, UnpicklingError, EOFError... for a damaged file
        raise WeightsError(f"{shown} cannot be read ({type(e).__name__}: {' '.join(str(e).split())[:200]}); {FIX}") from e
    if not isinstance(state, Mapping):
        raise WeightsError(f"{shown} holds a {type(state).__name__}, not a state dict; {FIX}")
    return sum(value.numel() for value in state.values() if isinstance(value, torch.Tensor))


def _digest(local: str, files: list[str]) -> str:
    if len(files) == 1:
        return sha256_of(os.path.join(local, files[0]))
    lines = "".join(f"{name} {sha256_of(os.path.join(local, name))}\n" for name in files)
    return hashlib.sha256(lines.encode()).hexdigest()


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()
