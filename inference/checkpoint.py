"""A user's checkpoint file -> its state dict and the metadata saved beside it, or one line saying why not.

Accepted files: ``torch.save``'s, and safetensors files (``model.safetensors``, as timm and the Hugging
Face hub publish weights: tensors only, no code). Accepted layouts (what people save): a plain state dict; ``{"state_dict": ...}`` (Lightning, many
scripts); ``{"model": ...}`` (torchvision's reference scripts). Keys may carry ``module.`` (DDP,
DataParallel), ``model.`` (a Lightning module's attribute), ``_orig_mod.`` (torch.compile) or
``model_ema.`` (a moving average saved alone) prefixes; they are stripped while every key shares
one. A file holding more than one network's weights is refused, naming what it holds: a moving
average beside the weights (``model_ema.`` keys, or a ``model_ema``/``state_dict_ema`` entry
beside ``model``/``state_dict``: nothing picks one for the user), or keys outside the prefix the
rest share (a Lightning module's loss weights). Beside the state dict, optional metadata:
- ``class_names`` or ``classes``: a list of names in the head's order, or ``class_to_idx``
  (torchvision's ImageFolder mapping);
- ``recipe``: any subset of ``{"resize", "crop", "mean", "std"}`` (``preprocess.recipe``).

Always ``torch.load(weights_only=True)``: a file that needs any other object to load is refused,
naming that object, and never with torch's advice to turn the check off. ``argparse.Namespace``
is allowed (the ``args`` torchvision's reference scripts save): it holds data and runs no code.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import re
import warnings
from dataclasses import dataclass

import torch

from inference.errors import WeightsError
from inference.files import read_bytes
from storage import redact

StateDict = dict[str, torch.Tensor]
WRAPPER_KEYS = ("state_dict", "model")  # where a state dict sits inside a checkpoint dict, first match wins
# DDP / Lightning / torch.compile / an average saved alone (Lightning, timm's ModelEmaV2); stripped while all keys share one.
PREFIXES = ("module.", "model.", "_orig_mod.", "model_ema.")
EMA_PREFIX = "model_ema."  # a moving average of the weights, kept in the same state dict as the weights
EMA_KEYS = ("model_ema", "state_dict_ema")  # the same beside the state dict: torchvision's reference scripts, timm
NAME_KEYS = ("class_names", "classes")
METADATA_KEYS = (*NAME_KEYS, "class_to_idx", "recipe")
TORCH_MAGIC = (b"PK\x03\x04", b"\x80")  # torch.save's zip format, and its legacy pickle format
SAVE_WEIGHTS = "torch.save(model.state_dict(), path)"  # the network's weights alone: what every fix asks for
FIX = f"save the weights with {SAVE_WEIGHTS}"
SHOWN_KEYS = 3  # keys named in a refusal; the rest are counted


@dataclass(frozen=True)
class Checkpoint:
    state: StateDict  # fp32 CPU tensors, prefixes stripped
    class_names: object | None  # as saved (checked against the head by inference.describe)
    recipe: object | None  # as saved: a dict with any of resize, crop, mean, std
    sha256: str | None  # of the file's bytes; None for weights that are not a user's file


def read_checkpoint(uri: str, s3_endpoint_url: str | None = None) -> Checkpoint:
    """Read and unpack the checkpoint at ``uri`` (path or ``s3://``); WeightsError when it cannot be used."""
    data = read_bytes(uri, s3_endpoint_url, "weights", "pass imagenet, random, a path or s3:// URI")
    shown = redact(uri)
    saved = _safetensors_load(data, shown) if _is_safetensors(data) else _torch_load(data, shown)
    state, metadata = _unwrap(saved, shown)
    state = _strip_prefixes(state, shown)
    # fp32 like a freshly built module, whatever precision the file was saved in.
    state = {name: t.float() if t.is_floating_point() else t for name, t in state.items()}
    names = _class_names(metadata, shown)
    return Checkpoint(state, names, metadata.get("recipe"), hashlib.sha256(data).hexdigest())


def _is_safetensors(data: bytes) -> bool:
    """A safetensors file: an 8-byte little-endian header length, then that many bytes of JSON."""
    header = int.from_bytes(data[:8], "little") if len(data) > 8 else 0
    return 0 < header <= len(data) - 8 and data[8:9] == b"{"


def _safetensors_load(data: bytes, shown: str) -> StateDict:
    try:
        from safetensors import SafetensorError
        from safetensors.torch import load
    except ImportError as e:
        raise WeightsError(f"{shown}: a safetensors file, and safetensors is not installed: pip install safetensors") from e
    try:
        return load(data)
    except (SafetensorError, ValueError) as e:
        raise WeightsError(f"{shown}: a damaged safetensors file ({' '.join(str(e).split())}); save it again") from e


def _torch_load(data: bytes, shown: str) -> object:
    """``torch.load(weights_only=True)``; torch's own warnings are kept out of the user's terminal."""
    if not data:
        raise WeightsError(f"{shown}: an empty file, not a PyTorch checkpoint; {FIX}")
    with warnings.catch_warnings(record=True) as seen, torch.serialization.safe_globals([argparse.Namespace]):
        try:
            return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        except Exception as e:  # torch raises UnpicklingError, RuntimeError, KeyError, EOFError... for bad files
            raise WeightsError(f"{shown}: {_why_not_loadable(e, data, seen)}") from e


def _why_not_loadable(error: Exception, data: bytes, seen: list[warnings.WarningMessage]) -> str:
    text = " ".join(str(error).split())
    refused = re.search(r"Unsupported global: GLOBAL (\S+)", text)
    if refused:
        return (f"not a loadable state dict: it needs {refused.group(1)} to load, which weights_only loading refuses "
                f"(it could run code); {FIX}")
    if "TorchScript" in text or any("TorchScript" in str(w.message) for w in seen):
        return f"a TorchScript archive (torch.jit.save), not a state dict; {FIX}"
    if not data.startswith(TORCH_MAGIC):
        return f"not a PyTorch checkpoint (a file written by torch.save): it starts with {data[:8]!r}; {FIX}"
    return f"a damaged or unsupported PyTorch checkpoint ({_torch_reason(text)}); {FIX}"


def _torch_reason(text: str) -> str:
    """torch's reason without its advice (which can suggest weights_only=False: never passed on)."""
    unpickler = re.search(r"WeightsUnpickler error: (.*?)(?: Check the documentation|$)", text)
    reason = unpickler.group(1) if unpickler else text.split(". ")[0]
    return reason.strip(" .") or "no reason given"


def _unwrap(saved: object, shown: str) -> tuple[StateDict, dict]:
    """The state dict inside ``saved`` and the dict its metadata sits in."""
    if isinstance(saved, dict):
        for key in WRAPPER_KEYS:
            if isinstance(saved.get(key), dict) and _tensors_in(saved[key]):
                _refuse_an_average_beside(saved, key, shown)
                return _only_tensors(saved[key], (), shown), saved
        if _tensors_in(saved):
            return _only_tensors(saved, METADATA_KEYS, shown), saved
    raise WeightsError(f"{shown}: no state dict found: {describe(saved)}; accepted: a state dict, or one under "
                       f"'state_dict' or 'model'; {FIX}")


def _tensors_in(mapping: dict) -> bool:
    return any(isinstance(value, torch.Tensor) for value in mapping.values())


def _only_tensors(state: dict, beside: tuple[str, ...], shown: str) -> StateDict:
    others = [key for key, value in state.items() if not isinstance(value, torch.Tensor) and key not in beside]
    if others:
        listed = ", ".join(f"{key} ({type(state[key]).__name__})" for key in others[:5])
        raise WeightsError(f"{shown}: the state dict holds {len(others)} entries that are not tensors: {listed}; {FIX}")
    return {key: value for key, value in state.items() if key not in beside}


def _refuse_an_average_beside(saved: dict, key: str, shown: str) -> None:
    """A moving average's entry beside the weights' ``key``: two networks, and which one is meant is the user's call."""
    average = next((ema for ema in EMA_KEYS if isinstance(saved.get(ema), dict) and _tensors_in(saved[ema])), None)
    if average is not None:
        raise WeightsError(f"{shown}: two copies of the weights, {key!r} and its moving average {average!r}; neither is "
                           f"chosen for you: save the one you mean alone, torch.save(checkpoint[{key!r}], path) or "
                           f"torch.save(checkpoint[{average!r}], path), and pass that file")


def _strip_prefixes(state: StateDict, shown: str) -> StateDict:
    while state and (prefix := next((p for p in PREFIXES if all(k.startswith(p) for k in state)), None)):
        state = {key[len(prefix):]: value for key, value in state.items()}
    _refuse_mixed_prefixes(state, shown)
    return state


def _refuse_mixed_prefixes(state: StateDict, shown: str) -> None:
    """Keys of a wrapper's prefix beside keys without it: the file holds more than one network's weights.

    Stripping one prefix would drop or rename the others' keys, and the architecture check would
    then blame the architecture (--arch), which is not what is wrong.
    """
    average = [key for key in state if key.startswith(EMA_PREFIX)]
    if average and len(average) < len(state):
        others = [key for key in state if not key.startswith(EMA_PREFIX)]
        raise WeightsError(
            f"{shown}: two copies of the weights: {len(average)} keys under {EMA_PREFIX!r} (a moving average) beside "
            f"{len(others)} others ({some_keys(others)}); neither is chosen for you: save the one you mean alone, e.g. "
            f"the average as torch.save({{k: v for k, v in state_dict.items() if k.startswith({EMA_PREFIX!r})}}, path)")
    for prefix in PREFIXES:
        inside = [key for key in state if key.startswith(prefix)]
        if len(state) < 2 * len(inside) < 2 * len(state):  # most keys, not all: the network, and something beside it
            outside = [key for key in state if not key.startswith(prefix)]
            raise WeightsError(f"{shown}: {len(inside)} keys start with {prefix!r} (the network) and {len(outside)} do not "
                               f"({some_keys(outside)}); save the network's weights alone, {SAVE_WEIGHTS}")


def some_keys(keys: list[str]) -> str:
    """The first SHOWN_KEYS of ``keys``, and how many more: "a, b, c, and 4 more"."""
    return ", ".join(keys[:SHOWN_KEYS]) + (f", and {len(keys) - SHOWN_KEYS} more" if len(keys) > SHOWN_KEYS else "")


def _class_names(metadata: dict, shown: str) -> object | None:
    """The saved names: ``class_names``, ``classes``, or ``class_to_idx`` put in index order."""
    found = {key: _in_index_order(metadata[key], shown) for key in METADATA_KEYS[:3] if metadata.get(key) is not None}
    if len({repr(names) for names in found.values()}) > 1:
        raise WeightsError(f"{shown}: {' and '.join(found)} disagree; keep one list of class names in the checkpoint")
    return next(iter(found.values()), None)


def _in_index_order(names: object, shown: str) -> object:
    """``class_to_idx`` ({name: index}) as the list of names by index; a list as saved."""
    if not isinstance(names, dict):
        return names
    indices = list(names.values())
    if not all(isinstance(i, int) for i in indices) or sorted(indices) != list(range(len(indices))):
        raise WeightsError(f"{shown}: class_to_idx must map each name to a distinct index 0..{len(indices) - 1}, "
                           f"got {indices[:5]}{' ...' if len(indices) > 5 else ''}")
    return sorted(names, key=names.__getitem__)


def describe(saved: object) -> str:
    """What a loaded object is, in a few words: "a dict with keys epoch, optimizer and no tensors"."""
    if isinstance(saved, torch.Tensor):
        return f"a single tensor of shape {tuple(saved.shape)}"
    if isinstance(saved, dict):
        keys = [str(key) for key in saved]
        listed = ", ".join(keys[:6]) + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")
        return f"a dict with keys {listed} and no tensors" if keys else "an empty dict"
    if isinstance(saved, (list, tuple)):
        return f"a {type(saved).__name__} of {len(saved)} items"
    return f"a {type(saved).__name__}"
