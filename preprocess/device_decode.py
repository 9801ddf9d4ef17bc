"""Batched JPEG decode onto a device: nvImageCodec, nvJPEG (torchvision), or libjpeg-turbo on CPU.

Use ``JpegDecoder(device)`` once per device stage; call ``decode`` from any number of threads.
Which decoder runs:
- ``nvimgcodec``: nvImageCodec (``pip install 'streaming-batch-inference[gpu]'``), which puts
  baseline JPEGs on the GPU's hardware JPEG engines (A100/H100: no SM time). One
  ``nvimgcodec.Decoder`` per thread: one shared by two threads returned None for good images.
- ``nvjpeg``: ``torchvision.io.decode_jpeg(list, device="cuda")``, batched nvJPEG. The default on
  CUDA when nvImageCodec is not installed.
- ``cpu``: the same torchvision call on the CPU device (libjpeg-turbo): how CI runs this code.
``JpegDecoder.name`` records which one ran, for the manifest.

CUDA streams. Work is issued on the caller's current stream. Before decoding, that stream is
synchronised: nvJPEG decodes on its own stream into memory the caching allocator handed out on the
caller's stream, and its hardware path does not wait for the caller's pending work on that memory
(pytorch/vision#9606: corrupted pixels on H100). torchvision then makes the caller's stream wait
for the decode; nvImageCodec is given the caller's stream and hands its images over through DLPack
on it. Each thread keeps its last batch's decoder-owned images alive until its next synchronise,
so no buffer is released while a kernel on the stream may still read it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Literal

import torch
from torchvision.io import ImageReadMode, decode_jpeg

DecoderName = Literal["nvimgcodec", "nvjpeg", "cpu"]
DECODERS: tuple[DecoderName, ...] = ("nvimgcodec", "nvjpeg", "cpu")
# nvImageCodec's CPU-side threads per decoder (Huffman for non-hardware JPEGs); the GPU actor
# has few cores and two decoding threads.
NVIMGCODEC_CPU_THREADS = 2


class DecoderUnavailable(RuntimeError):
    """The decoder asked for cannot run here; the message says what to install or choose."""


def choose_decoder(device: torch.device, requested: DecoderName | None = None) -> DecoderName:
    """``requested`` if it can run on ``device``, else the best available; never a silent swap."""
    if requested is not None and requested not in DECODERS:
        raise ValueError(f"device decoder {requested!r}: choose one of {', '.join(DECODERS)}")
    if device.type != "cuda":
        if requested not in (None, "cpu"):
            raise DecoderUnavailable(f"device decoder {requested!r} needs a CUDA device, got {device}; use 'cpu'")
        return "cpu"
    if requested == "cpu":
        raise DecoderUnavailable(f"device decoder 'cpu' decodes on the CPU device, not {device}; use 'nvjpeg'")
    if requested == "nvimgcodec":
        _import_nvimgcodec()  # raises with the install hint
        return "nvimgcodec"
    return requested or ("nvimgcodec" if nvimgcodec_available() else "nvjpeg")


def nvimgcodec_available() -> bool:
    try:
        _import_nvimgcodec()
    except DecoderUnavailable:
        return False
    return True


class JpegDecoder:
    """Decodes a batch of whole JPEGs to (3, H, W) uint8 tensors on ``device``, thread-safe."""

    def __init__(self, device: torch.device, name: DecoderName | None = None) -> None:
        self.device = device
        self.name: DecoderName = choose_decoder(device, name)
        self._local = threading.local()  # per thread: nvImageCodec decoder, last batch kept alive

    def decode(self, data: Sequence[bytes]) -> list[torch.Tensor | None]:
        """One (3, H, W) uint8 tensor per JPEG, on the current stream; None where the decoder refused it."""
        if self.device.type == "cuda":
            torch.cuda.current_stream(self.device).synchronize()  # vision#9606; also frees the last batch
        self._local.keep = None
        if self.name == "nvimgcodec":
            images = self._decode_nvimgcodec(data)
        else:
            images = _decode_torchvision(data, self.device)
        self._local.keep = images
        return images

    def _decode_nvimgcodec(self, data: Sequence[bytes]) -> list[torch.Tensor | None]:
        nvimgcodec = _import_nvimgcodec()
        decoder, params = self._thread_decoder(nvimgcodec)
        stream = torch.cuda.current_stream(self.device)
        decoded = decoder.decode([nvimgcodec.CodeStream(bytes(d)) for d in data], params=params, cuda_stream=stream.cuda_stream)
        # DLPack with the consumer's stream: the image is ready on ``stream`` when used there.
        return [None if image is None else torch.from_dlpack(image).permute(2, 0, 1) for image in decoded]  # (3, H, W)

    def _thread_decoder(self, nvimgcodec: object) -> tuple[object, object]:
        if getattr(self._local, "decoder", None) is None:
            self._local.decoder = nvimgcodec.Decoder(device_id=self.device.index or 0, max_num_cpu_threads=NVIMGCODEC_CPU_THREADS)
            # Pillow neither rotates by EXIF nor converts colour profiles; nvImageCodec would rotate by default.
            self._local.params = nvimgcodec.DecodeParams(apply_exif_orientation=False, color_spec=nvimgcodec.ColorSpec.SRGB)
        return self._local.decoder, self._local.params


def _decode_torchvision(data: Sequence[bytes], device: torch.device) -> list[torch.Tensor | None]:
    """Batched decode; if the batch fails, one by one, so a JPEG the decoder refuses costs only its row."""
    tensors = [torch.frombuffer(bytearray(d), dtype=torch.uint8) for d in data]
    try:
        return list(decode_jpeg(tensors, mode=ImageReadMode.RGB, device=device))
    except RuntimeError:
        return [_decode_one(t, device) for t in tensors]


def _decode_one(tensor: torch.Tensor, device: torch.device) -> torch.Tensor | None:
    try:
        return decode_jpeg(tensor, mode=ImageReadMode.RGB, device=device)
    except RuntimeError:
        return None  # the caller sends it to the CPU path, which decodes it or words the error


def _import_nvimgcodec() -> object:
    try:
        from nvidia import nvimgcodec
    except ImportError as e:
        raise DecoderUnavailable(
            f"nvImageCodec is not importable ({e}); pip install 'streaming-batch-inference[gpu]' "
            "(nvidia-nvimgcodec-cu13 and nvidia-nvjpeg), or choose the 'nvjpeg' decoder"
        ) from e
    return nvimgcodec
