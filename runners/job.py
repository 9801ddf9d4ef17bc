"""The job contract every runner shares: ``JobConfig`` and its argument parser.

A runner builds its parser with ``get_args_parser()`` (adding its own engine options), turns
the namespace into a ``JobConfig`` with ``config_from_args``, and reports user mistakes by
raising ``JobError``: ``run_main`` prints it as one line and exits non-zero.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from inference import WeightsError
from inference.device import PRECISIONS
from preprocess import DEFAULT_MAX_PIXELS
from storage import StorageError, has_credentials, redact

DECODES = ("cpu", "gpu")
EXIT_USAGE = 2  # argparse's code for a bad command line; we use it for every refused job


class JobError(RuntimeError):
    """A problem the user can fix before any work runs; printed as one line."""


@dataclass(frozen=True)
class JobConfig:
    input: str | None  # s3://bucket/prefix/ or a local path of Parquet files; None: the built-in sample
    output: str | None  # prefix for prediction Parquet + _SUCCESS.json; None: a fresh temp dir
    weights: str = "imagenet"  # imagenet | random | PATH | s3://...; never falls back to random
    s3_endpoint_url: str | None = None  # S3-compatible store (MinIO, moto...); else AWS_ENDPOINT_URL
    image_column: str = "image"  # encoded bytes, or raw uint8 pixels (see raw_shape)
    id_column: str = "id"  # when absent from the data, ids are "<file name>:<row index>"
    raw_shape: tuple[int, int, int] | None = None  # H,W,C of raw pixel cells; None: encoded, or per-row height/width/channels columns
    limit: int | None = None  # take only the first N rows, in file order
    batch_size: int | None = None  # images per model call; None: 256 on GPU, 32 on CPU
    precision: str | None = None  # fp32 | fp16 | bf16; None: bf16 on Ampere+, fp16 on older GPUs, fp32 on CPU
    topk: int = 5  # length of topk_labels / topk_scores
    max_pixels: int = DEFAULT_MAX_PIXELS  # larger images are refused as decompression bombs
    overwrite: bool = False  # replace what the output prefix holds (a finished or a partial job)
    resume: bool = False  # keep the parts an interrupted run committed on --output; run only the other input files
    decode: str = "cpu"  # cpu: CPU workers decode; gpu: JPEGs decoded (nvJPEG) and resized on the predictor's device
    compile: bool = False  # torch.compile the model (compiles once per worker, at start)

    def __post_init__(self) -> None:
        _require(self.limit is None or self.limit > 0, f"--limit must be positive, got {self.limit}")
        _require(self.batch_size is None or self.batch_size > 0, f"--batch-size must be positive, got {self.batch_size}")
        _require(self.precision in (None, *PRECISIONS), f"--precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        _require(1 <= self.topk <= 1000, f"--topk must be between 1 and 1000, got {self.topk}")
        _require(self.max_pixels > 0, f"--max-pixels must be positive, got {self.max_pixels}")
        _require(bool(self.image_column), "--image-column must not be empty")
        _require(self.raw_shape is None or (len(self.raw_shape) == 3 and min(self.raw_shape) > 0 and self.raw_shape[2] in (1, 3)),
                 f"--raw-shape must be H,W,C with C 1 or 3, got {self.raw_shape}")
        _require(self.decode in DECODES, f"--decode must be one of {', '.join(DECODES)}, got {self.decode!r}")
        _require(self.decode == "cpu" or self.raw_shape is None,
                 "--decode gpu decodes encoded images; raw pixels (--raw-shape) are already decoded: use --decode cpu")
        _require(not (self.resume and self.overwrite), "--resume keeps the output and --overwrite replaces it; pass one of them")
        _require(self.output is None or self.input is None or self.output.rstrip("/") != self.input.rstrip("/"),
                 "--output must differ from --input")
        for option, url in (("--input", self.input), ("--output", self.output), ("--weights", self.weights),
                            ("--s3-endpoint-url", self.s3_endpoint_url)):
            # The manifest records the config: a password in a URL would be written next to the data.
            _require(not has_credentials(url), f"{option} {redact(url or '')}: credentials in a URL are refused; "
                     "use AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")

    def to_dict(self) -> dict:
        """The config as the manifest records it."""
        return dataclasses.asdict(self)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise JobError(message)


class _OneLineParser(argparse.ArgumentParser):
    """argparse that reports a bad command line in one line instead of usage + error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


def get_args_parser(prog: str | None = None, description: str | None = None) -> argparse.ArgumentParser:
    """The options every runner shares; runners add an argument group of their own."""
    parser = _OneLineParser(prog=prog, description=description)
    io = parser.add_argument_group("data")
    io.add_argument("--input", help="s3://bucket/prefix/ or local path of Parquet files (default: built-in sample)")
    io.add_argument("--output", help="prefix for predictions and _SUCCESS.json (default: a new temp dir)")
    io.add_argument("--s3-endpoint-url", help="S3-compatible endpoint, e.g. http://127.0.0.1:9000 (default: AWS_ENDPOINT_URL)")
    io.add_argument("--image-column", default="image", help="column of image bytes or raw pixels (default: image)")
    io.add_argument("--id-column", default="id", help="column of row ids; absent: '<file name>:<row index>' (default: id)")
    io.add_argument("--raw-shape", type=_shape, help="H,W,C: the image column holds raw uint8 pixels of this shape")
    io.add_argument("--limit", type=int, help="process only the first N images")
    io.add_argument("--overwrite", action="store_true", help="replace what --output holds: a finished job, or an interrupted one")
    io.add_argument("--resume", action="store_true",
                    help="finish an interrupted job on --output: keep its committed parts, run only the other input files "
                         "(a finished job: nothing to do)")
    model = parser.add_argument_group("model")
    model.add_argument("--weights", help="imagenet | random | PATH | s3://... state dict (default: imagenet; random for the sample)")
    model.add_argument("--batch-size", type=int, help="images per model call (default: 256 on GPU, 32 on CPU)")
    model.add_argument("--precision", choices=PRECISIONS, help="default: bf16 on Ampere+ GPUs, fp16 on older, fp32 on CPU")
    model.add_argument("--topk", type=int, default=5, help="labels kept per image (default: 5)")
    model.add_argument("--decode", choices=DECODES, default="cpu",
                       help="cpu: decode on CPU workers (default); gpu: batched nvJPEG + resize on the predictor's GPU, CPU for non-JPEG")
    model.add_argument("--compile", action="store_true", help="torch.compile the model once per worker (slower start, faster batches)")
    model.add_argument("--max-pixels", type=int, default=DEFAULT_MAX_PIXELS, help="refuse larger images as decompression bombs")
    return parser


def _shape(text: str) -> tuple[int, int, int]:
    try:
        height, width, channels = (int(part) for part in text.split(","))
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected H,W,C such as 256,256,3, got {text!r}") from e
    return height, width, channels


def config_from_args(args: argparse.Namespace) -> JobConfig:
    """The ``JobConfig`` for parsed shared options (engine options stay in the namespace)."""
    fields = {f.name for f in dataclasses.fields(JobConfig)}
    values = {name: value for name, value in vars(args).items() if name in fields}
    if values.get("weights") is None:
        # The built-in sample must run offline, so it defaults to random weights (and says so);
        # a real job defaults to ImageNet and stops if those cannot be had.
        values["weights"] = "random" if values.get("input") is None else "imagenet"
    return JobConfig(**values)


def config_to_argv(config: JobConfig) -> list[str]:
    """The shared options that ``config_from_args`` turns back into ``config``.

    For a tool that starts runners with one config (``runners.compare``); lives here so it
    follows the parser when an option is added.
    """
    argv = []
    for field in dataclasses.fields(JobConfig):
        value, option = getattr(config, field.name), "--" + field.name.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            argv.append(option)
        elif isinstance(value, tuple):
            argv += [option, ",".join(map(str, value))]
        else:
            argv += [option, str(value)]
    return argv


def _one_line(error: BaseException) -> str:
    """The first line of the error a worker raised, when an engine re-raised it wrapped.

    Ray re-raises a task's exception as ``RayTaskError`` subclassing its class (so it is
    caught here), whose text is the worker's traceback; ``cause`` is the original, to which
    Ray Data appends lines of retry hints. Our own messages are one line.
    """
    cause = getattr(error, "cause", None)
    text = str(cause if isinstance(cause, BaseException) else error)
    return text.splitlines()[0] if text else type(error).__name__


def run_main(main: Callable[[Sequence[str] | None], object], argv: Sequence[str] | None = None) -> int:
    """Run ``main``; a user-fixable error becomes one line on stderr and exit code 2."""
    try:
        main(argv)
    except (JobError, StorageError, WeightsError) as e:
        print(f"error: {_one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted: no manifest written; re-run with --resume to keep the committed parts and finish", file=sys.stderr)
        return 130
    return 0
