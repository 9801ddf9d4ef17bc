"""Bytes -> pixels: the one preprocessing every engine runs.

Decode an encoded image (JPEG, PNG, WebP, ...) or take raw uint8 pixels, then resize and
center-crop to the model's eval size as uint8 HWC. Normalisation happens on the device
(see ``inference.predictor``), so what crosses the wire is 1 byte per channel.

By default (``cpu_resize="fast"``) whole JPEGs are decoded by libjpeg-turbo directly (``preprocess.fast_jpeg``)
and every image is resized by OpenCV (``preprocess.resample``), within the tolerance docs/model.md states per
recipe of the model's own transform; ``cpu_resize="exact"`` (``--cpu-resize exact``) keeps Pillow's pixels
(``preprocess.transform``), the reference transforms' own.

No engine imports here: Ray, Spark and SageMaker all call ``preprocess_batch``.
With ``--decode gpu|auto`` the CPU worker screens and routes JPEGs (``preprocess.split_decode``) and
the predictor decodes, resizes and crops its share (``preprocess.device_stage``, which needs
torch and is imported only there).
"""

from preprocess.batch import CPU_RESIZES, CpuResize, PreprocessedBatch, preprocess_batch
from preprocess.decode import DEFAULT_MAX_PIXELS, ImageError, ImageHeader, decode_image, inspect_image, pixels_from_raw
from preprocess.recipe import Recipe
from preprocess.transform import resize_center_crop

__all__ = [
    "CPU_RESIZES",
    "CpuResize",
    "DEFAULT_MAX_PIXELS",
    "Recipe",
    "ImageError",
    "ImageHeader",
    "PreprocessedBatch",
    "decode_image",
    "inspect_image",
    "pixels_from_raw",
    "preprocess_batch",
    "resize_center_crop",
]
