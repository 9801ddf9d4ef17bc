"""python -m runners.compare: every engine on the same data, model, batch size and precision.

    python -m runners.compare --engines ray,spark,sagemaker,local --input s3://bucket/images/ \\
        --weights random --report ./compare-report --instance g5.xlarge

Runs each engine's job on this machine, one after another, into ``<report>/outputs/<engine>/``:
Ray on a fresh local Ray, Spark on its default ``local[*,4]``, SageMaker in ``--local`` mode, and
``runners.local_job`` (plain PyTorch, the baseline). Then it times the model alone on input
already on the device (the ceiling), checks that the engines agree row by row (parity), and
writes results.json, results.md and chart.png into the report directory, printing the table.
``--stage preprocess`` times the CPU preprocessing alone per core instead (``all``: both).
Exit code 1 when an engine failed or the outputs disagree; the report is written either way.

``--engine-args ENGINE="ARGS"`` passes an engine its own options on top, e.g.
``--engine-args ray="--address auto --num-cpu-actors 12" --engine-args spark="--partitions 64"``
(``--address auto``: the Ray job on the cluster this machine belongs to). Options every engine shares (input,
weights, batch size, precision...) are refused there: they stay the same for all engines.

Each engine runs as its own process (``python -m runners.<engine>_job``), as a user runs it:
every engine starts cold under the same conditions, nothing one engine leaves behind (Spark's
JVM outlives ``spark.stop()``, Ray's driver state, the SageMaker server's threads) slows or
breaks the next, and a crashed engine fails its row instead of the comparison.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

from runners import ENGINES, MissingExtra, engine, missing_extra, require_extra

require_extra("compare", __name__)  # before matplotlib's import (runners.compare.report)

from inference import ModelSpec, choose_device, load_model  # noqa: E402
from inference.benchmark import model_only_images_per_sec
from inference.model import RECIPE, LoadedModel
from job import report
from job.sample import sample
from job.cli import config_from_args, config_to_argv, get_args_parser, run_main
from job.config import JobConfig
from job.errors import JobError
from job.execution import Capabilities, decide, model_for, this_machine
from job.night.manifest import MANIFEST, Manifest, read_manifest
from job.input.plan import InputPlan, read_file
from job.prepare import plan_input
from job.stages import image_cells
from preprocess import benchmark, preprocess_batch
from runners.compare import report as compare_report
from runners.compare.parity import Parity, check_parity, read_outcomes
from job.costs.prices import DEFAULT_TABLE, engine_prices
from storage import resolve

STAGES = ("jobs", "preprocess", "all")
PREPROCESS_MAX_IMAGES = 512  # the preprocessing stage holds the encoded images in memory
PREPROCESS_REPEATS = 3
EXIT_DISAGREE = 1  # an engine failed or the outputs disagree
ERROR_PREFIX = "error: "  # how every command's one line for a refused job begins (job.cli.run_main)


@dataclass
class Comparison:
    results: dict
    report: str  # the report directory

    @property
    def exit_code(self) -> int:
        parity = self.results["parity"]
        failed = any(r["failed"] for r in self.results["runs"])
        return EXIT_DISAGREE if failed or (parity is not None and not parity["ok"]) else 0


def get_compare_args_parser() -> argparse.ArgumentParser:
    # Its --price-per-hour prices each engine (ENGINE=USD,...), where a night's prices its machines: it replaces it.
    parser = get_args_parser(prog="python -m runners.compare", description=__doc__.splitlines()[0],
                             conflict_handler="resolve")
    group = parser.add_argument_group("compare")
    group.add_argument("--engines", default=",".join(ENGINES), help=f"comma-separated subset of {','.join(ENGINES)} (default: all)")
    group.add_argument("--report", help="local directory for results.json, results.md, chart.png and outputs/<engine>/ (default: a new temp dir)")
    group.add_argument("--stage", choices=STAGES, default="jobs", help="jobs: run the engines (default); preprocess: time CPU preprocessing per core; all: both")
    group.add_argument("--price-per-hour", dest="engine_prices",
                       help="ENGINE=USD,... e.g. ray=1.006,spark=1.006: adds $ per million images")
    group.add_argument("--instance", help="instance type priced from --prices for every engine, e.g. g5.xlarge")
    group.add_argument("--prices", default=DEFAULT_TABLE, help="price table for --instance (default: the prices.json shipped in job/costs/)")
    group.add_argument("--model-only-seconds", type=float, default=10.0, help="how long to time the model alone (default: 10)")
    group.add_argument("--append-results", help="also append results.json as one line to this JSONL file, e.g. benchmarks/results/compare.jsonl")
    group.add_argument("--engine-args", action="append", default=[], metavar='ENGINE="ARGS"',
                       help='options for one engine\'s job only, e.g. ray="--num-cpu-actors 12"; repeatable')
    group.add_argument("--note", default="", help="free text recorded with the results (e.g. 'machine shared')")
    return parser


def parse_engines(text: str) -> list[str]:
    engines = [e.strip() for e in text.split(",") if e.strip()]
    unknown = [e for e in engines if e not in ENGINES]
    if unknown or not engines or len(set(engines)) != len(engines):
        raise JobError(f"--engines must name each of {', '.join(ENGINES)} at most once, got {text!r}")
    for name in engines:  # before any engine runs: each needs its extra here, in this Python
        error = missing_extra(ENGINES[name].extra)
        if error is not None:
            raise MissingExtra(f"--engines {name}: {error} (or drop {name} from --engines)")
    return engines


def parse_engine_args(values: Sequence[str], engines: list[str]) -> dict[str, list[str]]:
    """{engine: its extra argv} from ``--engine-args ENGINE="ARGS"``, checked by that engine's own parser."""
    extra: dict[str, list[str]] = {engine: [] for engine in engines}
    for value in values:
        engine, sep, text = value.partition("=")
        if not sep or engine not in extra:
            raise JobError(f"--engine-args {value!r}: expected ENGINE=\"ARGS\" with ENGINE one of {', '.join(engines)}")
        extra[engine] += _checked_engine_argv(engine, shlex.split(text))
    return extra


def _checked_engine_argv(name: str, argv: list[str]) -> list[str]:
    parser = engine(name).args_parser()
    parser.exit_on_error = False  # an ArgumentError to turn into one line, not argparse's usage and exit

    def refuse(message: str) -> None:  # what argparse reports without an ArgumentError (an ambiguous abbreviation)
        raise JobError(f"--engine-args {name}: {message}")

    parser.error = refuse  # type: ignore[method-assign]
    try:
        parsed, unknown = parser.parse_known_args(argv)
    except argparse.ArgumentError as e:
        raise JobError(f"--engine-args {name}: {e}") from e
    if unknown:
        raise JobError(f"--engine-args {name}: {shlex.join(unknown)} is not an option of {engine(name).module}")
    # Compared by what argparse made of them, so abbreviations and --opt=value forms are caught too.
    defaults, shared = vars(parser.parse_args([])), vars(get_args_parser().parse_args([]))
    changed = [dest for dest in shared if getattr(parsed, dest) != defaults[dest]]
    if changed:
        option = "--" + changed[0].replace("_", "-")
        raise JobError(f"--engine-args {name}: {option} is the same for every engine; pass it to compare itself")
    return argv


def comparison_config(args: argparse.Namespace, report_dir: str) -> JobConfig:
    """The one config every engine gets, with the sample written once."""
    config = config_from_args(args)
    if config.input is None:
        config = dataclasses.replace(config, input=sample.write_sample(os.path.join(report_dir, "input")))
    return config


def decided_for_this_machine(config: JobConfig, images: int, model: ModelSpec) -> JobConfig:
    """``config`` with batch size, precision and compile decided once, by the job's own rule, for this machine.

    Every engine then gets them as options, so all run the same model the same way, and the
    model-only ceiling runs it that way too.
    """
    execution = decide(config, Capabilities(), this_machine(), images, model=model)
    return dataclasses.replace(config, batch_size=execution.batch_size, precision=execution.precision,
                               compile="on" if execution.compile else "off", topk=execution.topk)


def prepare_report(path: str | None, engines: list[str], overwrite: bool) -> str:
    """The local report directory; refuse finished outputs there unless --overwrite."""
    report_dir = path or tempfile.mkdtemp(prefix="compare-")
    if "://" in report_dir:
        raise JobError(f"--report {report_dir}: the report is written locally; pass a local directory")
    finished = [e for e in engines if os.path.exists(os.path.join(report_dir, "outputs", e, MANIFEST))]
    if finished and not overwrite:
        raise JobError(f"{report_dir} already holds outputs of {', '.join(finished)}; pass --overwrite or a new --report")
    os.makedirs(report_dir, exist_ok=True)
    return report_dir


def run_engine(name: str, config: JobConfig, report_dir: str, extra: Sequence[str] = ()) -> tuple[Manifest | None, str | None]:
    """Run one engine's job in its own process; returns (manifest, None), or (None, why it failed)."""
    output = os.path.join(report_dir, "outputs", name)
    chosen = engine(name)
    # The user's engine options come last: argparse keeps the last value, so --address or --master override ours.
    argv = [sys.executable, "-m", chosen.module, *config_to_argv(dataclasses.replace(config, output=output)),
            *chosen.compare_options, *extra]
    print(f"== {name}: {shlex.join(['python', *argv[1:]])}", file=sys.stderr, flush=True)
    code, reason = run_passing_stderr(argv)
    if code != 0:
        return None, f"exit code {code}" + (f": {reason}" if reason else "")
    return read_manifest(resolve(output)), None


def run_passing_stderr(argv: Sequence[str]) -> tuple[int, str | None]:
    """Run ``argv``, its stderr passed on line by line as it comes; returns its exit code and why it failed.

    Why: its last ``error: ...`` line (every command's one line for what the user can fix),
    else its last line (a traceback's ends with the exception).
    """
    last, reason = None, None
    with subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, errors="replace", bufsize=1) as process:
        for line in process.stderr:
            sys.stderr.write(line)
            if line.strip():
                last = line.strip()
            if line.startswith(ERROR_PREFIX):
                reason = line.strip()[len(ERROR_PREFIX):]
    return process.returncode, reason or last


def run_engines(engines: list[str], config: JobConfig, model: LoadedModel, report_dir: str,
                args: argparse.Namespace, engine_args: dict[str, list[str]]) -> tuple[list[dict], Parity, dict]:
    """Every engine's row, their parity and the model-only ceiling they are measured against."""
    prices = engine_prices(engines, args.engine_prices, args.instance, args.prices)
    shown = ["--verbose"] if args.verbose else []  # a shared option outside JobConfig: what each engine prints
    done = {engine: run_engine(engine, config, report_dir, [*shown, *engine_args[engine]]) for engine in engines}
    device = choose_device()
    print(f"== model only: {device}, {config.precision}, batch {config.batch_size}, {args.model_only_seconds:.0f} s", file=sys.stderr)
    model_only = dataclasses.asdict(model_only_images_per_sec(model, device, config.precision, config.batch_size,
                                                              seconds=args.model_only_seconds, compile=config.compile == "on",
                                                              topk=config.topk))
    rows = [compare_report.run_row(e, manifest, model_only["images_per_sec"], prices.get(e), failed, engine_args[e])
            for e, (manifest, failed) in done.items()]
    parity = check_parity({e: read_outcomes(m.output, config.s3_endpoint_url) for e, (m, _) in done.items() if m is not None})
    return rows, parity, model_only


def preprocess_stage(plan: InputPlan, config: JobConfig, model: ModelSpec) -> list[dict]:
    """Preprocessing per core on the input's own images, with the model's recipe: ours against torchvision's eval transform."""
    if plan.shape_columns or config.raw_shape:
        raise JobError("--stage preprocess times image decoding, but this input holds raw pixels; use an encoded input")
    images = _decodable_images(plan, config, model)
    timed = benchmark.methods(model.recipe, RECIPE.transforms(), "ResNet50_Weights.DEFAULT.transforms()")
    return benchmark.per_core_rows(images, timed, PREPROCESS_REPEATS)


def _decodable_images(plan: InputPlan, config: JobConfig, model: ModelSpec) -> list[bytes]:
    """The first PREPROCESS_MAX_IMAGES encoded images of the input that decode (bad rows would only time errors)."""
    cells: list[bytes] = []
    for file in plan.files:
        for _, batch in read_file(plan, file, PREPROCESS_MAX_IMAGES):
            cells += image_cells(batch.column(config.image_column), raw=False)[: PREPROCESS_MAX_IMAGES - len(cells)]
        if len(cells) >= PREPROCESS_MAX_IMAGES:
            break
    errors = preprocess_batch(cells, model.recipe, max_pixels=config.max_pixels).errors
    images = [c for c, e in zip(cells, errors) if e is None]
    if not images:
        raise JobError(f"{config.input}: no decodable image among the first {len(cells)} rows to time")
    return images


def engine_packages(engines: list[str]) -> list[str]:
    """The packages whose versions the engines' manifests record (``Engine.packages``), each once, in order."""
    return list(dict.fromkeys(package for name in engines for package in engine(name).packages))


def main(argv: Sequence[str] | None = None) -> Comparison:
    """Run the comparison; returns its results (``exit_code`` says whether it passed)."""
    args = get_compare_args_parser().parse_args(argv)
    if args.output:
        raise JobError("--output: compare writes each engine's output to <--report>/outputs/<engine>/; pass --report DIR")
    engines = parse_engines(args.engines)
    engine_args = parse_engine_args(args.engine_args, engines)
    report_dir = prepare_report(args.report, engines, args.overwrite)
    config = comparison_config(args, report_dir)
    plan = plan_input(resolve(config.input, config.s3_endpoint_url), config)  # a bad input stops here, once
    spec = model_for(config)  # so do unusable weights, names or recipe
    config = decided_for_this_machine(config, plan.rows, spec)
    model = load_model(spec, s3_endpoint_url=config.s3_endpoint_url)
    rows, parity, model_only = [], None, None
    if args.stage in ("jobs", "all"):
        rows, parity, model_only = run_engines(engines, config, model, report_dir, args, engine_args)
    results = {
        "runs": rows,
        "parity": dataclasses.asdict(parity) if parity else None,
        "model_only": model_only,
        "preprocess": preprocess_stage(plan, config, spec) if args.stage in ("preprocess", "all") else [],
        "command": shlex.join(["python", "-m", "runners.compare", *(sys.argv[1:] if argv is None else argv)]),
        "note": args.note,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "hardware": report.hardware(),
        "versions": report.versions(*engine_packages(engines)),
    }
    compare_report.write_report(report_dir, results)
    if args.append_results:
        with open(args.append_results, "a") as f:
            f.write(json.dumps(results, default=str) + "\n")
    print(compare_report.markdown(results))
    print(f"report: {report_dir} ({compare_report.RESULTS_JSON}, {compare_report.RESULTS_MD}, {compare_report.CHART_PNG})")
    return Comparison(results, report_dir)


def cli() -> int:
    comparisons: list[Comparison] = []
    code = run_main(lambda argv: comparisons.append(main(argv)))
    return code or comparisons[0].exit_code


if __name__ == "__main__":
    sys.exit(cli())
