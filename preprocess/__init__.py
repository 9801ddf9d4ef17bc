"""Bytes -> pixels: the one preprocessing every engine runs.

Decode an encoded image (JPEG, PNG, WebP, ...) or take raw uint8 pixels, then resize and
center-crop to the model's eval size as uint8 HWC. Normalisation happens on the device
(see ``inference.predictor``), so what crosses the wire is 1 byte per channel.

``preprocess_batch(..., fast_jpeg=True)`` (the ``fastjpeg`` extra) sends whole JPEGs through
libjpeg-turbo and OpenCV (``preprocess.fast_jpeg``), within ``preprocess.transform.PIXEL_TOLERANCE``
of torchvision's pixels; the default is Pillow, torchvision's pixels exactly.

No engine imports here: Ray, Spark and SageMaker all call ``preprocess_batch``.
With ``--decode gpu|auto`` the CPU worker screens and routes JPEGs (``preprocess.split_decode``) and
the predictor decodes, resizes and crops its share (``preprocess.device_stage``, which needs
torch and is imported only there).
"""

from preprocess.batch import PreprocessedBatch, preprocess_batch
from preprocess.decode import DEFAULT_MAX_PIXELS, ImageError, ImageHeader, decode_image, inspect_image, pixels_from_raw
from preprocess.recipe import Recipe
from preprocess.transform import resize_center_crop

__all__ = [
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
