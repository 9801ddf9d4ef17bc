"""python -m runners.history OUTPUT: a table's nights, one line each, and on a chart.

    python -m runners.history s3://my-bucket/preds-iceberg/ --instance g5.xlarge --plot nights.png

Reads ``OUTPUT/_history/`` (every finished night's manifest, and the records of stopped runs whose parts a later night
adopted) and prints, oldest first, one line a night: when it started (UTC), the engine, the images it scored by why
(new and changed files, a rollout's re-score, rows that timed out...), its steady images/s (else the whole run's),
its start-up, its dollars where a price is known, and where a rollout stood after it. ``--plot FILE.png`` draws the
same nights; ``--mlflow-experiment NAME`` logs a night (the newest, or ``--night RUN_ID``) as an MLflow run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from collections.abc import Sequence

from job.cli import HelpFormatter, run_main, uri_argument
from job.costs.history import Night, read_nights, read_record
from job.costs.prices import DEFAULT_TABLE, Price, instance
from job.errors import JobError
from job.night.rollout import rollout_line
from runners import missing_extra
from storage import resolve

EXAMPLES = """\
examples:
  # every night of a table, priced as g5.xlarge instances, and drawn
  python -m runners.history s3://my-bucket/preds-iceberg/ --instance g5.xlarge --plot nights.png

  # the newest night logged as an MLflow run (its options, figures and manifest)
  python -m runners.history s3://my-bucket/preds-iceberg/ --mlflow-experiment nightly-inference
"""


def get_history_args_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runners.history", description=__doc__.splitlines()[0],
                                     epilog=EXAMPLES, formatter_class=HelpFormatter)
    parser.add_argument("output", type=uri_argument, help="the table: the job's --output, local or s3://")
    parser.add_argument("--s3-endpoint-url", help="S3-compatible endpoint; not given: AWS_ENDPOINT_URL, else AWS's")
    shown = parser.add_argument_group("what it shows")
    shown.add_argument("--json", action="store_true", help="one JSON list of the nights instead of lines")
    shown.add_argument("--plot", metavar="FILE.png", help="draw the nights: images scored by why, the rate, the rollout")
    price = parser.add_argument_group("dollars (the command's wall time; not given: no $)")
    price.add_argument("--instance", metavar="TYPE", help="each night ran on instances of this type (one per --instance's "
                       "GPUs of the night, at least one), priced from --prices")
    price.add_argument("--price-per-hour", type=float, metavar="USD", help="an hour of the whole cluster a night ran on")
    price.add_argument("--prices", default=DEFAULT_TABLE, metavar="FILE", help="the price table")
    mlflow = parser.add_argument_group("MLflow (pip install -e '.[mlflow]')")
    mlflow.add_argument("--mlflow-experiment", metavar="NAME", help="log a night as a run of this experiment")
    mlflow.add_argument("--night", metavar="RUN_ID", help="the night to log; not given: the newest finished one")
    mlflow.add_argument("--mlflow-tracking-uri", metavar="URI", help="not given: MLflow's own (MLFLOW_TRACKING_URI)")
    return parser


def main(argv: Sequence[str] | None = None) -> list[dict]:
    """Print the nights (and draw, and log, as asked); returns them as ``--json`` prints them."""
    args = get_history_args_parser().parse_args(argv)
    if args.instance and args.price_per_hour is not None:
        raise JobError("--instance and --price-per-hour: pass one (the price of one instance, or of a night's cluster)")
    output = resolve(args.output, args.s3_endpoint_url)
    nights = read_nights(output)
    if not nights:
        raise JobError(f"{args.output}: no _history/ records: is it a job's --output that finished a night?")
    price = _price(args)
    records = [_record(night, price) for night in nights]
    print(json.dumps(records, indent=2, default=str) if args.json else "\n".join(night_line(n, r) for n, r in zip(nights, records)))
    if args.plot:
        error = missing_extra("compare")  # matplotlib: only when a chart is asked for
        if error is not None:
            raise JobError(f"--plot: {error}")
        from job.costs.chart import draw_nights

        print(f"chart: {draw_nights(nights, args.plot, f'{args.output}: {len(nights)} runs')}", file=sys.stderr)
    if args.mlflow_experiment:
        _log(output, nights, args)
    return records


def night_line(night: Night, record: dict) -> str:
    """``2026-12-07 03:29 UTC  local  scored 50 (new 50)  5.5 images/s whole run  start-up 10.0 s  $0.01``."""
    when = f"{night.at:%Y-%m-%d %H:%M} UTC" if night.at else night.run_id
    if not night.finished:
        return f"{when}  stopped before its manifest; its parts adopted by {night.adopted_by} ({night.model})"
    reasons = ", ".join(f"{reason} {count:,}" for reason, count in night.by_reason.items())
    rate = (f"{night.steady_images_per_sec:,.1f} images/s steady" if night.steady_images_per_sec else
            f"{night.images_per_sec:,.1f} images/s whole run" if night.images_per_sec else "nothing run")
    startup = f"start-up {night.startup_seconds:.1f} s" if night.startup_seconds is not None else "start-up n/a"
    dollars = "$ n/a" if record["dollars"] is None else "<$0.01" if record["dollars"] < 0.01 else f"${record['dollars']:,.2f}"
    parts = [when, night.engine or "?", f"scored {night.scored:,}" + (f" ({reasons})" if reasons else ""), rate, startup, dollars]
    if night.rollout:
        parts.append(rollout_line(dict(night.rollout)))
    return "  ".join(parts)


def _price(args: argparse.Namespace) -> tuple[Price, int | None] | None:
    """(the price an hour, GPUs an instance has, or None: the price is a whole cluster's), or None: no price."""
    if args.price_per_hour is not None:
        return Price(args.price_per_hour, "--price-per-hour"), None
    if args.instance:
        found = instance(args.instance, args.prices)
        if found.price is None:
            raise JobError(f"--instance {args.instance}: {args.prices} lists no price for it; pass --price-per-hour USD")
        return found.price, found.gpus
    return None


def _record(night: Night, price: tuple[Price, int | None] | None) -> dict:
    record = {key: value for key, value in dataclasses.asdict(night).items() if key not in ("options", "hardware")}
    record["dollars"] = None
    if price is not None and night.finished and night.wall_seconds is not None:
        usd, gpus = price
        instances = 1 if gpus is None or not gpus else max(1, math.ceil(night.gpus / gpus))
        record["dollars"] = round(usd.usd_per_hour * instances * night.wall_seconds / 3600, 4)
    return record


def _log(output, nights: list[Night], args: argparse.Namespace) -> None:
    from job.costs.mlflow_run import log_night

    finished = [n for n in nights if n.finished]
    night = next((n for n in nights if n.run_id == args.night), None) if args.night else (finished[-1] if finished else None)
    if night is None:
        raise JobError(f"--night {args.night}: no such run in {args.output}/_history/ (see the lines above)")
    run_id, new = log_night(night, read_record(output, night.run_id), args.mlflow_experiment, args.mlflow_tracking_uri)
    print(f"mlflow: night {night.run_id} {'logged as' if new else 'already logged as'} run {run_id} of experiment "
          f"{args.mlflow_experiment}", file=sys.stderr)


def cli() -> int:
    return run_main(main)


if __name__ == "__main__":
    sys.exit(cli())
