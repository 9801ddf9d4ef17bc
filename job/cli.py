"""The command line every engine's job shares: one parser, one ``JobConfig``, one way to fail.

An engine builds its parser with ``get_args_parser()`` (adding an argument group of its own),
turns the namespace into a ``JobConfig`` with ``config_from_args``, and runs its ``main``
through ``run_main``, which prints a user-fixable error as one line and exits 2 (refused before
any work) or 3 (the input's data stopped the run part-way: ``job.errors.DataError``).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import textwrap
from collections.abc import Callable, Sequence

from inference.archs import ARCHS
from inference.compile import COMPILE_CHOICES
from inference.dtypes import EMBEDDING_DTYPES, PRECISIONS
from inference.errors import WeightsError
from job.config import DRY_RUNS, EMBEDDINGS_CHOICES, ICEBERG_CATALOGS, TABLE_FORMATS, JobConfig
from job.config import parse_duration
from job.errors import (EXIT_INTERRUPTED, EXIT_STOPPED, DataError, JobError, StoppedError, hand_ctrl_c_to_the_command,
                        ignore_ctrl_c_from_now)
from job.input.objects import DEFAULT_PER_PART
from job.several.entries import ENTRY_FIELDS, SHARED_DEFAULTS, entry_configs, read_entries
from inference.weights import OWN_WEIGHTS
from preprocess import CPU_RESIZES, DEFAULT_MAX_PIXELS
from preprocess.recipe import CROP_MODES, INTERPOLATIONS
from preprocess.routing import DECODE_MODES
from storage import StorageError, normalise

EXIT_USAGE = 2  # argparse's code for a bad command line; we use it for every job refused before any work
# The input's data stopped the run part-way (a damaged file, a null or repeated id found by the run):
# running it again as it is fails again, so a scheduler should not retry it blindly; fix the data, then --resume.
EXIT_DATA = 3
RESUME_HINT = "no manifest written; re-run with --resume to keep the committed parts and finish"


class _OneLineParser(argparse.ArgumentParser):
    """argparse that reports a bad command line in one line instead of usage + error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


class HelpFormatter(argparse.HelpFormatter):
    """argparse's ``ArgumentDefaultsHelpFormatter``, less the defaults that say nothing (None, False, empty) and
    those an option's help already explains; a text of several lines (the epilog's examples) keeps its lines."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" not in text:
            return super()._fill_text(text, width, indent)
        return "".join(indent + line for line in text.splitlines(keepends=True))

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (not action.option_strings or "default" in text or default is argparse.SUPPRESS or default is None
                or isinstance(default, bool) or default in ("", [])):
            return text
        return f"{text} (default: %(default)s)"


def examples(prog: str) -> str:
    """The ``--help`` epilog of a job's command: the sample, a nightly table run, your own model."""
    return textwrap.dedent(f"""\
        examples:
          # the built-in sample: a few images, random weights, a local engine, offline
          {prog}

          # a nightly run over a growing bucket into a Delta table: only the files added or changed since the last night
          {prog} --input s3://my-bucket/images/ --output s3://my-bucket/predictions/ --table-format delta --incremental

          # your own fine-tuned checkpoint and its class names, with the embedding column beside the predictions
          {prog} --input s3://my-bucket/images/ --output s3://my-bucket/pets/ --weights s3://my-bucket/models/pets.pt \\
              --labels s3://my-bucket/models/pets.txt --embeddings with
        """)


def get_args_parser(prog: str | None = None, description: str | None = None, epilog: str | None = None,
                    conflict_handler: str = "error") -> argparse.ArgumentParser:
    """The options every engine shares, in groups as a user decides them; engines add an argument group of their own.
    ``conflict_handler="resolve"``: a command that gives a shared option its own meaning (runners.capacity's
    --price-per-hour) replaces it."""
    parser = _OneLineParser(prog=prog, description=description, epilog=epilog, formatter_class=HelpFormatter,
                            conflict_handler=conflict_handler)
    _add_input(parser.add_argument_group("input"))
    _add_output(parser.add_argument_group("output and table"))
    _add_reruns(parser.add_argument_group("re-runs", "what a run does with what --output already holds (none of them: "
                                          "an --output that holds a run is refused)"))
    _add_model(parser.add_argument_group("model"))
    _add_recipe(parser.add_argument_group("recipe", "how the model wants its pixels; any subset (not given: the "
                                          "checkpoint's recipe, else the model's own: its torchvision weights' (ResNet50 "
                                          "232/224 bilinear, ImageNet mean/std), timm's pretrained_cfg, the folder's "
                                          "image processor, the recipe logged with the MLflow model)"))
    _add_execution(parser.add_argument_group("execution", "how the model runs; not given: decided for the engine's "
                                             "devices and recorded in the manifest"))
    shown = parser.add_argument_group("what the command prints")
    shown.add_argument("--verbose", action="store_true",
                       help="the engine's own lines too (Ray's INFO lines, progress bars and workers' output; Spark's "
                            "warnings); without it: the job's lines, its progress display and its summary")
    return parser


def _add_input(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--input", type=uri_argument,
                       help="s3://bucket/prefix/ or local path of Parquet files, or of image objects (*.jpg, *.png, "
                            "...: one row each, its id the key relative to the prefix); not given: the built-in sample")
    group.add_argument("--s3-endpoint-url", help="S3-compatible endpoint, e.g. http://127.0.0.1:9000; not given: "
                       "AWS_ENDPOINT_URL, else AWS's")
    group.add_argument("--image-column", default="image", help="column of image bytes or raw pixels")
    group.add_argument("--id-column", default="id",
                       help="column of row ids; when the files lack it, each row's id is '<path relative to --input>:<row index>'")
    group.add_argument("--raw-shape", type=_shape, help="H,W,C: the image column holds raw uint8 pixels of this shape")
    group.add_argument("--limit", type=int, help="process only the first N images")
    group.add_argument("--skip-id-check", action="store_true",
                       help="for inputs known to be clean: saves one read of the id column, about 0.3 s per million ids "
                            "(a repeated id is then found only after the run)")
    group.add_argument("--max-pixels", type=int, default=DEFAULT_MAX_PIXELS,
                       help="larger images are error rows (decompression bombs)")


def _add_output(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--output", type=uri_argument,
                       help="prefix for predictions and _SUCCESS.json; not given: a new temp dir")
    group.add_argument("--table-format", choices=TABLE_FORMATS, default=JobConfig.table_format,
                       help="parquet: a folder of Parquet parts; delta: a Delta Lake table, iceberg: an Iceberg "
                            "table (metadata/ beside the parts): one commit a run, so readers see whole nights only")
    group.add_argument("--time-travel-days", type=float, default=JobConfig.time_travel_days,
                       help="delta/iceberg: how long the parts a run took out of the table stay readable for time "
                            "travel before a later run deletes them")
    group.add_argument("--iceberg-catalog", choices=ICEBERG_CATALOGS, default=JobConfig.iceberg_catalog,
                       help="iceberg: what names the table's current version. embedded: metadata/ in --output, no "
                            "server; glue: AWS Glue's Data Catalog, where Athena, EMR and Spark find it by name: each "
                            "night commits through Glue (optimistic concurrency), the table is created on the first run. "
                            "As pyiceberg's and Ray Data's catalog type 'glue' (Glue's endpoint: AWS's, or AWS_ENDPOINT_URL_GLUE)")
    group.add_argument("--iceberg-table", metavar="DATABASE.TABLE",
                       help="--iceberg-catalog glue: the table's name in Glue, as Ray Data's write_iceberg(table_identifier=) "
                            "and Spark's glue_catalog.DATABASE.TABLE name it; the database must exist (terraform declares it)")
    group.add_argument("--objects-per-part", type=positive_int(), default=DEFAULT_PER_PART,
                       help="an --input of image objects: objects per output part on average, grouped by their keys' "
                            "hashes so a night redoes only the groups that changed")


def _add_reruns(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--incremental", action="store_true",
                       help="on an output a finished run left: run only the input files added or changed since (size, "
                            "modification time), delete the parts of files gone, keep the rest unread; the first run "
                            "into an empty --output runs everything. Each run's manifest stays in _history/")
    group.add_argument("--keep-removed", action="store_true", help="--incremental: keep the parts of input files that are gone")
    group.add_argument("--rollout-files", type=positive_int(), metavar="N",
                       help="--incremental with a new model (or other options) than the table's: score new and changed "
                            "files with it and re-score N of the other files a night, oldest first, until the table is "
                            "the new model's (one commit a night; the rows' model column says which made them)")
    group.add_argument("--rollout-time", type=duration, metavar="DURATION",
                       help="--incremental with a new model: re-score as many of the other files, oldest first, as fit in "
                            "DURATION (3h, 90m, 1h30m) at the rate this table's nights measured with the new model (its first "
                            "night: one file, to measure it), after the night's new and changed files and its start-up "
                            "(with --rollout-files too: the fewer)")
    group.add_argument("--resume", action="store_true",
                       help="finish an interrupted job on --output: keep its committed parts, run what the stopped night "
                            "had left (a finished job with nothing left: nothing to do)")
    group.add_argument("--dry-run", nargs="?", const="text", choices=DRY_RUNS,
                       help="print tonight's plan (each input file's fate by action and model, the refusals the night "
                            "would meet, its estimated time and where the rate came from) and stop: no lease, nothing "
                            "written, no engine started; json: one JSON object on stdout")
    group.add_argument("--price-per-hour", type=float, metavar="USD",
                       help="what an hour of the machines the night runs on costs: --dry-run says the night's cost")
    group.add_argument("--overwrite", action="store_true", help="replace what --output holds: a finished job, or an interrupted one")


def _add_model(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--models", type=uri_argument, metavar="FILE",
                       help="several models in one run, each into its own table: a TOML file of [[models]] entries, each "
                            "with the model's and its table's options by their Python names (model, weights, labels, "
                            "embeddings, topk, output, table_format, the recipe options, rollout_files...); each image is "
                            "read and decoded once for them all. The other options here hold for every model")
    group.add_argument("--model", metavar="SOURCE",
                       help="a torchvision classifier (resnet50, convnext_tiny, efficientnet_b0...: --arch's names); "
                            "timm:NAME (weights from --weights); hf:PATH, a Hugging Face folder (local or s3://) written by "
                            "save_pretrained; models:/NAME/VERSION, models:/NAME@ALIAS or runs:/RUN/PATH, an MLflow PyTorch "
                            "model (MLFLOW_TRACKING_URI's registry); not given: --arch, else resnet50")
    group.add_argument("--weights", type=uri_argument,
                       help=f"imagenet | random | {OWN_WEIGHTS} | PATH | s3://... checkpoint: a state dict (torch.save or "
                            "safetensors), or one under 'state_dict' or 'model', any head size; not given: the model's own "
                            "(imagenet for a torchvision name, the folder's or the MLflow model's), random for the sample")
    group.add_argument("--arch", choices=ARCHS, metavar="ARCH",
                       help=f"--model's old name, for a torchvision classifier: {', '.join(ARCHS)}")
    group.add_argument("--labels", type=uri_argument, metavar="PATH|s3://",
                       help="class names, one per line or a JSON list, in the head's order; not given: the checkpoint's "
                            "class_names/classes, torchvision's ImageNet names for imagenet, else none (label_name null)")
    group.add_argument("--embeddings", nargs="?", const="with", default="off", choices=EMBEDDINGS_CHOICES,
                       help="write the model's embedding column (a classifier's pooled feature, ResNet50: 2048 values; a "
                            "CLIP or SigLIP tower's image embedding; DINOv2's class token): with (a bare --embeddings) beside "
                            "the predictions, only instead of them (no prediction columns; what an embedder needs), off")
    group.add_argument("--embedding-dtype", choices=EMBEDDING_DTYPES, default=JobConfig.embedding_dtype,
                       help="the embedding column's element type: float32 (8 KiB a row for ResNet50), or float16 (half "
                            "that, written as Parquet's FLOAT16, which Spark, Delta and Iceberg cannot read; pyarrow and "
                            "pandas can)")
    group.add_argument("--topk", type=int, help="labels kept per image; not given: 5, or the class count when smaller")


def _add_recipe(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--resize", type=positive_int(), help="short side after resizing, in pixels")
    group.add_argument("--crop", type=positive_int(), help="square centre crop fed to the model, in pixels")
    group.add_argument("--mean", type=_rgb, metavar="R,G,B", help="per-channel mean of pixels scaled to [0, 1], e.g. 0.5,0.5,0.5")
    group.add_argument("--std", type=_rgb, metavar="R,G,B", help="per-channel std of pixels scaled to [0, 1], e.g. 0.5,0.5,0.5")
    group.add_argument("--interpolation", choices=INTERPOLATIONS, help="the resize kernel (antialiased, as PIL's)")
    group.add_argument("--crop-mode", choices=CROP_MODES,
                       help="center: the short side to --resize, then the --crop square from the centre; squash: both "
                            "sides to --resize (the aspect not kept), then the centre --crop (a ViT or SigLIP processor's)")


def _add_execution(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--batch-size", type=int, help="images per model call; not given: 256 on GPU, 32 on CPU")
    group.add_argument("--precision", choices=PRECISIONS, help="not given: bf16 on Ampere+ GPUs, fp16 on older, fp32 on CPU")
    group.add_argument("--decode", choices=DECODE_MODES,
                       help="cpu: decode on the CPU workers; gpu: JPEGs decoded and resized on the predictor's GPU "
                            "(other formats on the CPU); auto: the CPU workers decode what they keep up with, the GPU "
                            "the rest; not given: cpu")
    group.add_argument("--cpu-resize", choices=CPU_RESIZES,
                       help="how the CPU workers resize: fast (libjpeg-turbo + OpenCV, within mean 1 level of the model's "
                            "own transform, docs/model.md) or exact (Pillow: the transform's own pixels); not given: fast")
    group.add_argument("--compile", nargs="?", const="on", choices=COMPILE_CHOICES,
                       help="torch.compile the model once per worker: slower start, faster batches. on (the same as a "
                            "bare --compile), off, auto: on a GPU for jobs long enough to repay the compile; not given: off")
    group.add_argument("--no-compile", dest="compile", action="store_const", const="off", help="the same as --compile off")
    group.add_argument("--batch-timeout", type=float, default=600.0, metavar="SECONDS",
                       help="a model call past this is retried once, then its rows become error rows naming the limit "
                            "and the run goes on (a healthy batch takes seconds)")


def uri_argument(text: str) -> str:
    """An argparse ``type`` for a path or URI option: its scheme spelt once (``storage.normalise``: ``S3://``,
    ``s3a://`` -> ``s3://``) as the command line is read, so nothing after the parser (the namespace, the config,
    an engine's own options) ever holds a spelling that could pass for a local path."""
    return normalise(text)


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


def non_negative_seconds(text: str) -> float:
    """An argparse ``type`` for a duration in seconds, 0 or more, with a message naming the value."""
    try:
        value = float(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from e
    if not value >= 0 or value == float("inf"):  # NaN and infinity too
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, got {text}")
    return value


def _shape(text: str) -> tuple[int, int, int]:
    try:
        height, width, channels = (int(part) for part in text.split(","))
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected H,W,C such as 256,256,3, got {text!r}") from e
    return height, width, channels


def _rgb(text: str) -> tuple[float, float, float]:
    try:
        red, green, blue = (float(part) for part in text.split(","))
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected three numbers R,G,B such as 0.485,0.456,0.406, got {text!r}") from e
    return red, green, blue


def duration(text: str) -> float:
    """``3h``, ``90m``, ``1h30m``, ``45s`` or ``3600`` (seconds) -> seconds (``job.config.parse_duration``); argparse's
    one line otherwise."""
    try:
        return parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


def config_from_args(args: argparse.Namespace) -> JobConfig:
    """The ``JobConfig`` for parsed shared options (engine options stay in the namespace); with ``--models``, the first
    entry's (``configs_from_args`` has them all)."""
    return configs_from_args(args)[0]


def configs_from_args(args: argparse.Namespace) -> tuple[JobConfig, ...]:
    """One ``JobConfig`` per model the command runs: the options as given, or, with ``--models FILE``, each entry's
    own (``job.several.entries``) over the options the command line gives every model."""
    fields = {f.name for f in dataclasses.fields(JobConfig)}
    values = {name: value for name, value in vars(args).items() if name in fields}
    if values.get("models") is None:
        if values.get("weights") is None and values.get("input") is None:
            # The built-in sample must run offline, so it defaults to random weights (and says so); a real job
            # defaults to the model's own (JobConfig: ImageNet for a torchvision name) and stops if they cannot be had.
            values["weights"] = "random"
        return (JobConfig(**values),)
    path = values["models"]
    defaults = {f.name: f.default for f in dataclasses.fields(JobConfig)}
    given = sorted(name for name in ENTRY_FIELDS - SHARED_DEFAULTS if values.get(name) not in (None, defaults.get(name)))
    if given:
        raise JobError(f"--{given[0].replace('_', '-')} with --models {path}: each model's own options, and its output, "
                       f"go in its [[models]] entry of the file ({given[0]} = ...), not on the command line")
    if values.get("decode") not in (None, "cpu"):
        raise JobError(f"--decode {values['decode']} with --models {path}: a device decodes for one model's recipe; "
                       "several models take their pixels from the CPU workers' one decode an image: --decode cpu")
    shared = {name: value for name, value in values.items() if name not in ENTRY_FIELDS - SHARED_DEFAULTS}
    return entry_configs(path, shared, read_entries(path, values.get("s3_endpoint_url")))


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
    """Run ``main``; a user-fixable error becomes one line on stderr and exit code 2 (3: ``DataError``, 4:
    ``StoppedError``).

    ``interrupted_hint`` follows "interrupted" on Ctrl-C: jobs pass ``RESUME_HINT``; tools need none.
    """
    hand_ctrl_c_to_the_command()  # from here Ctrl-C is a KeyboardInterrupt, answered below
    try:
        main(argv)
    except (JobError, StorageError, WeightsError, DataError, StoppedError) as e:
        text = str(e)
        print(f"error: {text.splitlines()[0] if text else type(e).__name__}", file=sys.stderr)
        return EXIT_DATA if isinstance(e, DataError) else EXIT_STOPPED if isinstance(e, StoppedError) else EXIT_USAGE
    except KeyboardInterrupt:
        ignore_ctrl_c_from_now()
        print("interrupted" + (f": {interrupted_hint}" if interrupted_hint else ""), file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0
