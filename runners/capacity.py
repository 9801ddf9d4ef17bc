"""python -m runners.capacity: how long N images take, and the cluster a deadline needs, from measured rates.

    python -m runners.capacity --images 2000 --engine local --calibrate
    python -m runners.capacity --images 500000000 --deadline 6h --engine ray --instance p5.48xlarge --write-deploy ./sized

The question takes the job's own options (the model, its recipe, --precision, --batch-size: the same flags as the
night's command), the images (``--images N``, or every row of ``--input``, counted from its footers), an engine and
hardware (``--instance TYPE``, ``--gpu KIND``, or this machine). The answer: GPUs (or machines) and vCPUs a GPU, the
time, the dollars, which side limits (the model, or the CPU decode that feeds it), and every figure's source: a
calibration made now (``--calibrate``), this table's own nights (``--output``'s ``_history/``), a calibration recorded
earlier, or the shipped rates table (``--rates-table`` lists it). Hardware none of them covers is "not measured".
How the estimate is made and how far to trust it: docs/capacity.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from collections.abc import Sequence

from job.cli import config_from_args, duration, get_args_parser, positive_int, run_main
from job.costs import calibration, shipped
from job.costs.answer import Question, answer
from job.costs.choose import Wanted, rates_for
from job.costs.deploy_files import REPOSITORY_DEPLOY, write_deploy
from job.costs.layout import ENGINES, RAY_CPU_NODE, RAY_HEAD, gpus_used, vcpus_per_gpu
from job.costs.prices import DEFAULT_TABLE, Instance, Price, instance
from job.costs.rates import UnitRates
from job.costs.sizing import duration_text
from job.errors import JobError
from job.execution import BATCH_SIZE_CPU, BATCH_SIZE_GPU, DEFAULT_CPU_RESIZE, Devices, default_precision, model_for
from job.output.rows import model_lineage
from job.prepare import plan_input
from job.report import hardware
from job.timeline import COMMAND_STARTED_AT
from storage import resolve

EXAMPLES = """\
examples:
  # this machine, measured now: how long 2,000 of your images take on the local engine
  python -m runners.capacity --images 2000 --engine local --input ./my-images --calibrate

  # the H100s 500 million images need by 6 hours on Ray, and the Anyscale configs with those counts
  python -m runners.capacity --images 500000000 --deadline 6h --engine ray --instance p5.48xlarge --write-deploy ./sized

  # the shipped rates: every figure, its hardware, date and source
  python -m runners.capacity --rates-table
"""


def get_capacity_args_parser() -> argparse.ArgumentParser:
    # Its --price-per-hour prices one --instance (or unit), where a night's prices the night's machines: it replaces it.
    parser = get_args_parser(prog="python -m runners.capacity", description=__doc__.splitlines()[0], epilog=EXAMPLES,
                             conflict_handler="resolve")
    question = parser.add_argument_group("capacity: the question")
    question.add_argument("--images", type=positive_int(0), help="images to score; not given: every row of --input")
    question.add_argument("--deadline", type=duration, metavar="DURATION",
                          help="e.g. 6h, 90m, 1h30m: choose the fewest GPUs (or machines) that finish by then, start-up "
                               "included; not given: the time on the cluster --gpus describes")
    question.add_argument("--engine", choices=ENGINES, default="ray", help="the engine the night runs")
    hardware_group = parser.add_argument_group("capacity: the hardware (not given: this machine)")
    hardware_group.add_argument("--instance", metavar="TYPE", help="the GPU nodes' instance type, e.g. g5.xlarge, p5.48xlarge "
                                "(its vCPUs, GPUs and list price from --prices)")
    hardware_group.add_argument("--gpu", metavar="KIND", help="a GPU kind, e.g. H100, without an instance type")
    hardware_group.add_argument("--vcpus-per-gpu", type=positive_int(), metavar="N",
                                help="vCPUs decoding for each GPU (Ray: CPU-only nodes add them); not given: as measured, "
                                     "else what feeds the model, else the instance's")
    hardware_group.add_argument("--gpus", type=positive_int(), metavar="N",
                                help="without --deadline: the GPUs (or CPU-only machines) to time; not given: one instance's")
    hardware_group.add_argument("--cpu-instance", default=RAY_CPU_NODE, metavar="TYPE", help="Ray's CPU-only decoders' nodes")
    hardware_group.add_argument("--prices", default=DEFAULT_TABLE, metavar="FILE", help="the price and instance table")
    hardware_group.add_argument("--price-per-hour", type=float, metavar="USD",
                                help="an hour of one --instance (over the table's list price), or without one, of one unit")
    rates = parser.add_argument_group("capacity: the rates")
    rates.add_argument("--calibrate", action="store_true", help="measure this machine now (decode per core, the model on its "
                       "device: about a minute on a CPU), on --input's images or the built-in sample, and keep it")
    rates.add_argument("--calibrate-seconds", type=float, default=10.0, metavar="SECONDS",
                       help="how long --calibrate times the model alone, after its warm-up")
    rates.add_argument("--calibration", default=calibration.cache_path(), metavar="FILE",
                       help="where calibrations are kept and found")
    rates.add_argument("--rates", default=shipped.DEFAULT_TABLE, metavar="FILE", help="the shipped rates table")
    rates.add_argument("--rates-table", action="store_true", help="print the shipped rates table and stop")
    out = parser.add_argument_group("capacity: what it writes")
    out.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    out.add_argument("--write-deploy", metavar="DIR", help="write the engine's deploy files, set to the counts, under DIR")
    out.add_argument("--deploy-from", default=REPOSITORY_DEPLOY, metavar="DIR", help="the deploy/ folder to copy")
    return parser


def main(argv: Sequence[str] | None = None, *, started_at: float | None = None) -> dict:
    """Answer the question; returns the answer as ``--json`` prints it (``deploy_files``: what was written)."""
    started_at = time.time() if started_at is None else started_at
    args = get_capacity_args_parser().parse_args(argv)
    if args.rates_table:
        print("\n".join(shipped.table_lines(args.rates)))
        return {"figures": shipped.figures(args.rates)}
    config = dataclasses.replace(config_from_args(args), skip_id_check=True)  # a count reads footers, not ids
    spec = model_for(config)
    plan = plan_input(resolve(config.input, config.s3_endpoint_url), config) if config.input else None
    images = args.images if args.images is not None else plan.rows if plan is not None else None
    if images is None:
        raise JobError("how many images? pass --images N, or --input PREFIX to count its rows")
    gpu_instance = _instance(args)
    device = gpu_instance.gpu if gpu_instance is not None else args.gpu or this_device()
    devices = Devices("cpu") if device == "cpu" else Devices("cuda", device)
    precision = config.precision or default_precision(devices)
    batch = config.batch_size or (BATCH_SIZE_CPU if device == "cpu" else BATCH_SIZE_GPU)
    calibrated = _calibrate(args, config, spec, plan, device, precision, batch, started_at) if args.calibrate else None
    wanted = Wanted(args.engine, spec.source, model_lineage(spec.source, spec.weights, spec.weights_sha256),
                    spec.recipe.crop, precision, device, hardware())
    output = resolve(config.output, config.s3_endpoint_url) if config.output else None
    rates = rates_for(wanted, output=output, calibration_file=args.calibration, rates_table=args.rates, calibrated=calibrated)
    result = answer(_question(args, images, device, gpu_instance, rates, f" of {wanted.label} ({spec.recipe.crop} px, "
                                                                        f"{precision}, batch {batch})"), rates)
    written = _write_deploy(args, result) if args.write_deploy else []
    record = {**result.to_dict(), "deploy_files": written}
    print(json.dumps(record, indent=2) if args.json else "\n".join(result.lines() + [f"  wrote: {p}" for p in written]))
    return record


def this_device() -> str:
    """This machine's first GPU's name, else "cpu"."""
    gpus = hardware()["gpus"]
    return gpus[0] if gpus and not gpus[0].startswith("unknown") else "cpu"


def _instance(args: argparse.Namespace) -> Instance | None:
    if args.instance is None:
        return None
    if args.gpu:
        raise JobError(f"--instance {args.instance} and --gpu {args.gpu}: name one (an instance says its GPU)")
    found = instance(args.instance, args.prices, f"ml.{args.instance}" if args.engine == "sagemaker" else None)
    if not found.gpus:
        raise JobError(f"--instance {found.name} has no GPU, and CPU-only rates hold only for the machine they were "
                       "measured on: run --calibrate there and ask without --instance")
    if args.price_per_hour is not None:
        found = dataclasses.replace(found, price=Price(args.price_per_hour, "--price-per-hour"))
    return found


def _calibrate(args: argparse.Namespace, config, spec, plan, device: str, precision: str, batch: int,
               started_at: float) -> calibration.Calibration:
    here = this_device()
    if device != here:
        raise JobError(f"--calibrate measures this machine ({here}), but the question names {device}: run it on such a "
                       "machine (then --calibration FILE here), or drop --instance/--gpu")
    images, described = calibration.images_to_time(plan, config, spec.recipe)
    print(f"calibrating this machine: {described}, then {spec.source} alone for {args.calibrate_seconds:g} s", file=sys.stderr)
    measured = calibration.measure(spec, images, described, device_name=None if here == "cpu" else here,
                                   precision=precision, batch_size=batch, cpu_resize=config.cpu_resize or DEFAULT_CPU_RESIZE,
                                   max_pixels=config.max_pixels, model_seconds=args.calibrate_seconds, started_at=started_at,
                                   s3_endpoint_url=config.s3_endpoint_url)
    path = calibration.record(measured, args.calibration)
    print(f"calibration kept in {path} (a later call on this machine reuses it): {measured.decode_per_core:,.1f} images/s "
          f"a core decoding, {measured.model_per_device:,.2f} images/s the model alone on {measured.device}", file=sys.stderr)
    return measured


def _question(args: argparse.Namespace, images: int, device: str, gpu_instance: Instance | None, rates: UnitRates,
              describe: str) -> Question:
    machine = os.cpu_count() or 1
    here = gpu_instance is None and not args.gpu  # this machine's GPU: its vCPUs feed it
    vcpus = (vcpus_per_gpu(args.engine, rates, gpu_instance, args.vcpus_per_gpu, machine if here else None)
             if device != "cpu" else machine)
    ray = args.engine == "ray" and gpu_instance is not None
    unit_price = Price(args.price_per_hour, "--price-per-hour") if args.price_per_hour is not None and gpu_instance is None else None
    units = args.gpus or (gpus_used(args.engine, gpu_instance) if gpu_instance is not None else 1)
    return Question(images, args.deadline, args.engine, device, vcpus, units,
                    max_units=1 if args.engine == "local" else None, instance=gpu_instance,
                    cpu_instance=instance(args.cpu_instance, args.prices) if ray else None,
                    head=instance(RAY_HEAD, args.prices) if ray else None, unit_price=unit_price, describe=describe)


def _write_deploy(args: argparse.Namespace, result) -> list[str]:
    if result.layout is None:
        raise JobError("--write-deploy: the deploy files hold GPU clusters by instance type: pass --instance TYPE")
    deadline = f" by {duration_text(args.deadline)}" if args.deadline else ""
    return write_deploy(result.layout, args.write_deploy, args.deploy_from,
                        why=f"{result.estimate.images:,} images{deadline}, {result.estimate.seconds:,.0f} s estimated")


def cli() -> int:
    return run_main(lambda argv: main(argv, started_at=COMMAND_STARTED_AT))


if __name__ == "__main__":
    sys.exit(cli())
