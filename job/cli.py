"""The command line every engine's job shares: one parser, one ``JobConfig``, one way to fail.

An engine builds its parser with ``get_args_parser()`` (adding an argument group of its own),
turns the namespace into a ``JobConfig`` with ``config_from_args``, and runs its ``main``
through ``run_main``, which prints a user-fixable error as one line and exits 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Sequence

from inference.names import PRECISIONS, WeightsError
from inference.compile import COMPILE_CHOICES
from job.config import JobConfig
from job.errors import JobError
from preprocess import DEFAULT_MAX_PIXELS
from preprocess.routing import DECODE_MODES
from storage import StorageError

EXIT_USAGE = 2  # argparse's code for a bad command line; we use it for every refused job
EXIT_INTERRUPTED = 130  # the shell's code for Ctrl-C
RESUME_HINT = "no manifest written; re-run with --resume to keep the committed parts and finish"


class _OneLineParser(argparse.ArgumentParser):
    """argparse that reports a bad command line in one line instead of usage + error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


def get_args_parser(prog: str | None = None, description: str | None = None) -> argparse.ArgumentParser:
    """The options every engine shares; engines add an argument group of their own."""
    parser = _OneLineParser(prog=prog, description=description)
    io = parser.add_argument_group("data")
    io.add_argument("--input", help="s3://bucket/prefix/ or local path of Parquet files (default: built-in sample)")
    io.add_argument("--output", help="prefix for predictions and _SUCCESS.json (default: a new temp dir)")
    io.add_argument("--s3-endpoint-url", help="S3-compatible endpoint, e.g. http://127.0.0.1:9000 (default: AWS_ENDPOINT_URL)")
    io.add_argument("--image-column", default="image", help="column of image bytes or raw pixels (default: image)")
    io.add_argument("--id-column", default="id", help="column of row ids; absent: '<file name>:<row index>' (default: id)")
    io.add_argument("--raw-shape", type=_shape, help="H,W,C: the image column holds raw uint8 pixels of this shape")
    io.add_argument("--limit", type=int, help="process only the first N images")
    io.add_argument("--skip-id-check", action="store_true",
                    help="for inputs known to be clean: saves one read of the id column, about 0.3 s per million ids "
                         "(a repeated id is then found only after the run)")
    io.add_argument("--overwrite", action="store_true", help="replace what --output holds: a finished job, or an interrupted one")
    io.add_argument("--resume", action="store_true",
                    help="finish an interrupted job on --output: keep its committed parts, run only the other input files "
                         "(a finished job: nothing to do)")
    model = parser.add_argument_group("model")
    model.add_argument("--weights", help="imagenet | random | PATH | s3://... state dict (default: imagenet; random for the sample)")
    model.add_argument("--batch-size", type=int, help="images per model call (default: 256 on GPU, 32 on CPU)")
    model.add_argument("--precision", choices=PRECISIONS, help="default: bf16 on Ampere+ GPUs, fp16 on older, fp32 on CPU")
    model.add_argument("--topk", type=int, default=5, help="labels kept per image (default: 5)")
    model.add_argument("--decode", choices=DECODE_MODES,
                       help="cpu: decode on the CPU workers (default); gpu: JPEGs decoded and resized on the predictor's "
                            "GPU (other formats on the CPU); auto: the CPU workers decode what they keep up with, the GPU "
                            "the rest. gpu and auto are not yet measured on a GPU")
    model.add_argument("--compile", nargs="?", const="on", choices=COMPILE_CHOICES,
                       help="torch.compile the model once per worker: slower start, faster batches. on (the same as a "
                            "bare --compile), off (default: eager), auto: on a GPU for jobs long enough to repay the "
                            "compile (inference/compile.py); compiled runs are not yet measured on a GPU")
    model.add_argument("--no-compile", dest="compile", action="store_const", const="off", help="the same as --compile off")
    model.add_argument("--max-pixels", type=int, default=DEFAULT_MAX_PIXELS, help="refuse larger images as decompression bombs")
    shown = parser.add_argument_group("what the command prints")
    shown.add_argument("--verbose", action="store_true",
                       help="the engine's own lines too (Ray's INFO lines, progress bars and workers' output; Spark's "
                            "warnings); default: the job's lines, its progress display and its summary")
    return parser


def positive_int(minimum: int = 1) -> Callable[[str], int]:
    """An argparse ``type`` for integers of at least ``minimum``, with a message naming the value."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}") from e
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text}")
        return value

    return parse


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

    For a tool that starts jobs with one config (``runners.compare``); lives here so it
    follows the parser when an option is added.
    """
    argv = []
    for field in dataclasses.fields(JobConfig):
        value, option = getattr(config, field.name), "--" + field.name.replace("_", "-")
        if value is None or (value is False and field.default is False):
            continue
        if isinstance(value, bool):
            argv.append(option if value else "--no-" + option[2:])
        elif isinstance(value, tuple):
            argv += [option, ",".join(map(str, value))]
        else:
            argv += [option, str(value)]
    return argv


def run_main(main: Callable[[Sequence[str] | None], object], argv: Sequence[str] | None = None,
             interrupted_hint: str | None = None) -> int:
    """Run ``main``; a user-fixable error becomes one line on stderr and exit code 2.

    ``interrupted_hint`` follows "interrupted" on Ctrl-C: jobs pass ``RESUME_HINT``; tools need none.
    """
    try:
        main(argv)
    except (JobError, StorageError, WeightsError) as e:
        text = str(e)
        print(f"error: {text.splitlines()[0] if text else type(e).__name__}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted" + (f": {interrupted_hint}" if interrupted_hint else ""), file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0
