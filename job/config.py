"""``JobConfig``: the options every engine's job shares, checked once, recorded in the manifest.

Build it from a command line with ``job.cli.config_from_args``; an engine's own options
(actor counts, Spark master, SageMaker instance) stay in that engine's parser.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from inference.archs import ARCHS, DEFAULT_ARCH
from inference.compile import COMPILE_CHOICES
from inference.dtypes import EMBEDDING_DTYPES, PRECISIONS
from inference.errors import WeightsError
from inference.sources import parse_model, weights_for_source
from job.errors import JobError
from job.input.objects import DEFAULT_PER_PART
from preprocess import CPU_RESIZES, DEFAULT_MAX_PIXELS
from preprocess.recipe import RGB, Recipe
from preprocess.routing import DECODE_MODES
from storage import has_credentials, normalise, redact, within

# --embeddings: off: predictions only; with: the embedding column beside the predictions; only: the
# embedding column instead of them (the prediction columns are left out of the table).
EMBEDDINGS_CHOICES = ("off", "with", "only")
RECIPE_FIELDS = ("resize", "crop", "mean", "std", "interpolation", "crop_mode")
URI_FIELDS = ("input", "output", "weights", "labels", "models")
# --table-format: what a reader finds under --output. parquet: a folder of Parquet parts beside our manifest;
# delta and iceberg: the same parts, committed once a run as one version of a Delta Lake / Iceberg table.
DRY_RUNS = ("text", "json")  # --dry-run: a plan for a person, or one JSON object on stdout
TABLE_FORMATS = ("parquet", "delta", "iceberg")
# --iceberg-catalog: what names an Iceberg table's current version. embedded: the prefix's own metadata/ folder (no
# server); glue: AWS Glue's Data Catalog (Athena, EMR, Spark and Snowflake find the table there by its name).
ICEBERG_CATALOGS = ("embedded", "glue")
# Glue table and database names that Athena reads: lower-case letters, digits and underscores.
GLUE_TABLE_NAME = re.compile(r"[a-z0-9_]+\.[a-z0-9_]+")
# Every single size fits inside it, so each recipe option alone is checked here, and resize
# against crop only when both are given; the whole recipe (with the checkpoint's) is checked
# by inference.describe_model, still before any work.
_ROOMY_RECIPE = Recipe(resize=2**31, crop=1)


@dataclass(frozen=True)
class JobConfig:
    input: str | None  # s3://bucket/prefix/ or a local path of Parquet files; None: the built-in sample
    output: str | None  # prefix for prediction Parquet + _SUCCESS.json; None: a fresh temp dir
    # imagenet | random | own | PATH | s3://...; None: the model source's own (imagenet for a torchvision name, the
    # folder's or the MLflow model's for hf: and MLflow; timm: needs one). Never falls back to random.
    weights: str | None = None
    s3_endpoint_url: str | None = None  # S3-compatible store (MinIO, moto...); else AWS_ENDPOINT_URL
    image_column: str = "image"  # encoded bytes, or raw uint8 pixels (see raw_shape)
    id_column: str = "id"  # when absent from the data, ids are "<path relative to --input>:<row index>"
    raw_shape: tuple[int, int, int] | None = None  # H,W,C of raw pixel cells; None: encoded, or per-row height/width/channels columns
    limit: int | None = None  # take only the first N rows, in file order
    # True: trust the ids to be unique and skip reading the id column before the run (about 0.3 s
    # per million text ids); a repeat is then found only by the final check, after the whole run.
    skip_id_check: bool = False
    # An --input of image objects: objects per part on average (job.input.objects), so 10 million
    # objects make thousands of parts and a night redoes only the groups whose objects changed.
    objects_per_part: int = DEFAULT_PER_PART
    # None below: decided by the driver's plan for the engine's devices (job.execution.decide).
    batch_size: int | None = None  # images per model call; None: 256 on GPU, 32 on CPU
    precision: str | None = None  # fp32 | fp16 | bf16; None: bf16 on Ampere+, fp16 on older GPUs, fp32 on CPU
    topk: int | None = None  # length of topk_labels / topk_scores; None: 5, or the class count when smaller
    max_pixels: int = DEFAULT_MAX_PIXELS  # larger images are refused as decompression bombs
    # Seconds one model call may take before it is retried once, then its rows become error rows
    # (job.stages.Classify). A healthy batch takes seconds: 256 images on a GPU well under one, 32 on
    # one loaded CPU core about ten; a call past ten minutes is stuck, not slow.
    batch_timeout: float = 600.0
    overwrite: bool = False  # replace what the output prefix holds (a finished or a partial job)
    resume: bool = False  # keep the parts an interrupted run committed on --output; run only the other input files
    # On a finished output: run only the input files added or changed since (by size and modification
    # time), drop the parts of files gone, keep the rest unread (job.night.record). Implies --resume's keeping.
    incremental: bool = False
    keep_removed: bool = False  # --incremental: keep the parts of input files that are gone (default: delete them)
    # --incremental with other options (a new model) than some of the table's files were made with: score every new or
    # changed file with these, and re-score at most this many of the others a night, oldest first (job.night.rollout);
    # None: such a night is refused, naming this option and --overwrite.
    rollout_files: int | None = None
    # --incremental with a new model: re-score as many of the others, oldest first, as fit in this many seconds at the
    # rate this table's nights measured (start-up and the night's new files included; job.night.window); None: no window.
    rollout_time: float | None = None
    # text | json: print the night's plan (each input file's fate, by action and model; the refusals the night would
    # meet; its estimated time and cost) and stop, before the lease, any write or any engine (job.night.dry_run).
    dry_run: str | None = None
    # What an hour of the machines a night runs on costs, in USD: --dry-run's estimated cost; None: no price known.
    price_per_hour: float | None = None
    decode: str | None = None  # cpu: CPU workers decode; gpu: JPEGs on the predictor's device; auto: both; None: cpu
    compile: str | None = None  # on | off | auto (by the job's size, inference.compile); None: off
    # fast: libjpeg-turbo + OpenCV, 1.4-1.7x the images per CPU core on photo-like JPEGs, within mean 1 level of the
    # model's own transform (docs/model.md); exact: Pillow, the transform's own pixels. None: fast.
    cpu_resize: str | None = None
    # The model (inference.describe_model resolves these once, on the driver, before any work).
    # --model: a torchvision name, timm:NAME, hf:PATH, models:/NAME/VERSION, models:/NAME@ALIAS or runs:/RUN/PATH
    # (inference.sources); None: --arch, else resnet50.
    model: str | None = None
    # --models FILE: several models in one run, each with its own table (job.several.entries); None: the one model above.
    # An entry's own config has none: it is one of the run's models.
    models: str | None = None
    arch: str | None = None  # --model's old name, torchvision names only (inference.archs.ARCHS); kept for old commands
    labels: str | None = None  # class names, one per line or a JSON list (path or s3://); None: the checkpoint's, else ImageNet's for imagenet
    # The eval recipe, any subset; None: the checkpoint's, else the model's own (its torchvision weights', timm's
    # pretrained_cfg, the folder's image processor, the recipe logged with the MLflow model).
    resize: int | None = None  # short side after resize (both sides for a squash), pixels
    crop: int | None = None  # square centre crop fed to the network, pixels
    mean: RGB | None = None  # per channel, of pixels scaled to [0, 1]
    std: RGB | None = None
    interpolation: str | None = None  # the resize kernel: bilinear | bicubic (preprocess.recipe.INTERPOLATIONS)
    crop_mode: str | None = None  # center: short side to resize, then crop; squash: both sides to resize (CROP_MODES)
    embeddings: str = "off"  # off | with | only (EMBEDDINGS_CHOICES): the pooled feature beside or instead of predictions
    # float32: what Spark, Delta and Iceberg read (8 KiB a row for ResNet50's 2048 values). float16 halves that, but
    # pyarrow writes it only as Parquet's FLOAT16, which Spark 3.5/4 refuses and Delta/Iceberg have no type for.
    embedding_dtype: str = "float32"
    # parquet: the plain folder (readers glob its parts); delta / iceberg: the driver commits each run's parts as
    # one table version (job.night.formats), so a reader sees last night's table or tonight's, never a mix.
    table_format: str = "parquet"
    # delta / iceberg: parts a run took out of the table (replaced or deleted input files) stay readable for
    # time travel this long, then a later run deletes them (Delta's default deletedFileRetentionDuration).
    time_travel_days: float = 7.0
    # iceberg: embedded (metadata/ in the prefix, no server) or glue (AWS Glue's catalog commits each night, with its
    # optimistic concurrency, and readers find the table by name; the table is created in Glue on the first run).
    iceberg_catalog: str = "embedded"
    iceberg_table: str | None = None  # glue: DATABASE.TABLE, as Ray Data's write_iceberg and Spark's catalogs name it

    def __post_init__(self) -> None:
        self._normalise_uris()
        self._resolve_model()
        _require(self.limit is None or self.limit > 0, f"--limit must be positive, got {self.limit}")
        _require(self.batch_size is None or self.batch_size > 0, f"--batch-size must be positive, got {self.batch_size}")
        _require(self.precision in (None, *PRECISIONS), f"--precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        _require(self.topk is None or 1 <= self.topk <= 1000, f"--topk must be between 1 and 1000, got {self.topk}")
        _require(self.objects_per_part > 0, f"--objects-per-part must be positive, got {self.objects_per_part}")
        _require(self.max_pixels > 0, f"--max-pixels must be positive, got {self.max_pixels}")
        _require(0 < self.batch_timeout < float("inf"), f"--batch-timeout must be a positive number of seconds, got {self.batch_timeout}")
        _require(bool(self.image_column), "--image-column must not be empty")
        _require(self.raw_shape is None or (len(self.raw_shape) == 3 and min(self.raw_shape) > 0 and self.raw_shape[2] in (1, 3)),
                 f"--raw-shape must be H,W,C with C 1 or 3, got {self.raw_shape}")
        _require(self.decode in (None, *DECODE_MODES), f"--decode must be one of {', '.join(DECODE_MODES)}, got {self.decode!r}")
        _require(self.compile in (None, *COMPILE_CHOICES), f"--compile must be one of {', '.join(COMPILE_CHOICES)}, got {self.compile!r}")
        _require(self.cpu_resize in (None, *CPU_RESIZES),
                 f"--cpu-resize must be one of {', '.join(CPU_RESIZES)}, got {self.cpu_resize!r}")
        _require(self.decode in (None, "cpu") or self.raw_shape is None,
                 f"--decode {self.decode} decodes encoded images; raw pixels (--raw-shape) are already decoded: use --decode cpu")
        _require(not (self.resume and self.overwrite), "--resume keeps the output and --overwrite replaces it; pass one of them")
        _require(not (self.incremental and self.overwrite),
                 "--incremental keeps what the output holds and --overwrite replaces it; pass one of them")
        _require(not (self.incremental and self.limit), "--limit takes part of the input, --incremental all of it; pass one of them")
        _require(self.rollout_files is None or self.rollout_files > 0,
                 f"--rollout-files must be a positive number of files a night, got {self.rollout_files}")
        _require(self.rollout_files is None or self.incremental or self.resume, "--rollout-files rolls a new model out "
                 "night by night over a table --incremental keeps; add --incremental (or --resume, to finish a stopped night)")
        _require(self.rollout_time is None or self.rollout_time > 0,
                 f"--rollout-time must be a positive duration, got {self.rollout_time} s")
        _require(self.rollout_time is None or self.incremental or self.resume, "--rollout-time rolls a new model out "
                 "night by night over a table --incremental keeps; add --incremental (or --resume, to finish a stopped night)")
        _require(self.dry_run in (None, *DRY_RUNS), f"--dry-run must be one of {', '.join(DRY_RUNS)}, got {self.dry_run!r}")
        _require(self.price_per_hour is None or self.price_per_hour > 0,
                 f"--price-per-hour must be a positive number of USD, got {self.price_per_hour}")
        _require(self.incremental or not self.keep_removed, "--keep-removed keeps the parts of removed input files in an "
                 "--incremental run; add --incremental")
        _require(self.embeddings in EMBEDDINGS_CHOICES,
                 f"--embeddings must be one of {', '.join(EMBEDDINGS_CHOICES)}, got {self.embeddings!r}")
        _require(self.embedding_dtype in EMBEDDING_DTYPES,
                 f"--embedding-dtype must be one of {', '.join(EMBEDDING_DTYPES)}, got {self.embedding_dtype!r}")
        _require(self.table_format in TABLE_FORMATS,
                 f"--table-format must be one of {', '.join(TABLE_FORMATS)}, got {self.table_format!r}")
        _require(self.table_format == "parquet" or self.embedding_dtype != "float16",
                 f"--embedding-dtype float16 with --table-format {self.table_format}: the format has no float16 type; "
                 "use --embedding-dtype float32, or --table-format parquet")
        _require(self.time_travel_days >= 0, f"--time-travel-days must be 0 or more, got {self.time_travel_days}")
        self._check_iceberg_catalog()
        self._check_recipe()
        for option, url in (("--input", self.input), ("--output", self.output), ("--weights", self.weights),
                            ("--model", self.model), ("--models", self.models),
                            ("--labels", self.labels), ("--s3-endpoint-url", self.s3_endpoint_url)):
            # The manifest records the config: a password in a URL would be written next to the data.
            _require(not has_credentials(url), f"{option} {redact(url or '')}: credentials in a URL are refused; "
                     "use AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
        if self.input is not None and self.output is not None:
            _require_apart(self.input, self.output)

    def _normalise_uris(self) -> None:
        """One spelling of each URI (``storage.normalise``) before anything compares or records it: the lease, the
        manifest and the parts' options then name ``S3://b/x`` and ``s3a://b/x`` as the one prefix ``s3://b/x``."""
        for name in URI_FIELDS:
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, normalise(value))  # frozen: this is construction, not a change

    def _resolve_model(self) -> None:
        """``model`` from --model or its old name --arch, and ``weights`` from the source's default when not given."""
        _require(self.arch is None or self.arch in ARCHS, f"--arch must be one of {', '.join(ARCHS)}, got {self.arch!r}")
        _require(self.model is None or self.arch is None or self.model == self.arch,
                 f"--model {self.model} and --arch {self.arch} name two models (--arch is --model's old name); pass one")
        try:
            source = parse_model(self.model or self.arch or DEFAULT_ARCH)
            weights = weights_for_source(source, self.weights, sample=False)
        except WeightsError as e:
            raise JobError(str(e)) from e
        # frozen: this is construction, not a change. One spelling of --model (an hf: folder's URI too, as
        # _normalise_uris spells the others); arch as its readers knew it: a torchvision name, else None.
        object.__setattr__(self, "model", source.given)
        object.__setattr__(self, "arch", source.arch)
        object.__setattr__(self, "weights", weights)

    def recipe_overrides(self) -> dict[str, object]:
        """The recipe options given (any of ``RECIPE_FIELDS``), for ``inference.describe_model``."""
        return {name: getattr(self, name) for name in RECIPE_FIELDS if getattr(self, name) is not None}

    def to_dict(self) -> dict:
        """The config as the manifest records it."""
        return dataclasses.asdict(self)

    def _check_iceberg_catalog(self) -> None:
        _require(self.iceberg_catalog in ICEBERG_CATALOGS,
                 f"--iceberg-catalog must be one of {', '.join(ICEBERG_CATALOGS)}, got {self.iceberg_catalog!r}")
        if self.iceberg_catalog == "embedded":
            _require(self.iceberg_table is None, f"--iceberg-table {self.iceberg_table} names a table in a catalog; the "
                     "embedded catalog needs no name: add --iceberg-catalog glue, or leave --iceberg-table out")
            return
        _require(self.table_format == "iceberg", f"--iceberg-catalog glue is the catalog of an Iceberg table, and "
                 f"--table-format is {self.table_format}: add --table-format iceberg")
        _require(self.iceberg_table is not None, "--iceberg-catalog glue needs --iceberg-table DATABASE.TABLE, the "
                 "table's name in Glue (its database must exist: terraform/glue.tf declares one)")
        _require(GLUE_TABLE_NAME.fullmatch(self.iceberg_table or "") is not None,
                 f"--iceberg-table must be DATABASE.TABLE of lower-case letters, digits and _ (the names Athena reads), "
                 f"got {self.iceberg_table!r}")
        _require(self.output is not None and self.output.startswith("s3://"),
                 f"--iceberg-catalog glue: a Glue table's files lie on S3, and --output {self.output or '(a temp dir)'} "
                 "is not an s3:// prefix; pass an s3:// --output, or leave --iceberg-catalog out")

    def _check_recipe(self) -> None:
        try:
            _ROOMY_RECIPE.updated(self.recipe_overrides(), "the recipe options")
        except ValueError as e:
            option = next((f"--{name.replace('_', '-')}" for name in RECIPE_FIELDS if f"'s {name} " in str(e)), "--resize/--crop")
            raise JobError(f"{option}: {e.__cause__ or e}") from e


def _require_apart(input_uri: str, output_uri: str) -> None:
    """Refuse an output prefix in the input's (or the reverse), before any work.

    Refused rather than left out of the input's listing: every other reader of the input (a
    Spark table, the next Ray job) would still take the predictions for input rows.
    """
    _require(not within(output_uri, input_uri),
             f"--output {output_uri} lies in --input {input_uri}: the next run (--resume, --overwrite) would read this "
             "job's parts as input, and so would every other reader of the input; choose an --output outside --input")
    _require(not within(input_uri, output_uri),
             f"--input {input_uri} lies in --output {output_uri}: the job would write its parts among its input files; "
             "choose an --output outside --input")


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise JobError(message)


# Durations as people write them (--rollout-time, a --models entry's rollout_time, runners.capacity --deadline).
DURATION_UNITS = {"h": 3600, "m": 60, "s": 1}


def parse_duration(text: str | float | int) -> float:
    """``3h``, ``90m``, ``1h30m``, ``45s``, ``3600`` or a number -> seconds above 0; ValueError naming the forms."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        total = float(text)
    else:
        total, number = 0.0, ""
        try:
            for char in str(text).strip().lower():
                if char in DURATION_UNITS:
                    total, number = total + float(number) * DURATION_UNITS[char], ""
                else:
                    number += char
            total += float(number) if number else 0.0
        except ValueError as e:
            raise ValueError(f"expected a duration such as 3h, 90m, 1h30m or 3600s, got {text!r}") from e
    if not total > 0:
        raise ValueError(f"expected a duration above 0, such as 3h, got {text!r}")
    return total
