"""What a night will take, before it runs: ``forecast_night`` (``--dry-run``'s estimate, ``--rollout-time``'s rate).

The rate comes from the firmest source there is, and says which:
1. this table's own recent nights (``table_rate``: their manifests' steady images/s and start-up), with this engine and
   this model, else with this engine and any model;
2. else a short measurement on a sample of tonight's own images on this machine (``job.costs.calibration``: the decode
   on one core, the model on this machine's device), when the night runs on this machine's kind of device;
3. else the shipped rates table (``job.costs.shipped``) for the night's GPU, with the vCPUs it was measured with;
never a guess: with none of them, the estimate says "not measured" and has no seconds.
The cost is the seconds at ``--price-per-hour`` (the machines a night runs on), where one is given.
"""

from __future__ import annotations

import os
import time

from job.costs import calibration, shipped
from job.costs.prices import SECONDS_PER_HOUR
from job.costs.rates import Rate, table_rate
from job.costs.sizing import unit_rate
from job.engine import Job
from job.errors import JobError
from job.execution import Devices
from job.night.dry_run import Estimate
from job.night.options import model_label
from job.night.plan import NightPlan
from job.night.window import Window
from storage import Location

CALIBRATION_MODEL_SECONDS = 2.0  # a dry run's measurement of the model: short, the best batch of those timed


def forecast_night(night: NightPlan, job: Job, engine: str, devices: Devices, price_per_hour: float | None) -> Estimate:
    """The night's estimated seconds (start-up included) and dollars, each with its source."""
    images = night.pending.rows
    if not images:
        return Estimate(0.0, None, 0.0, "nothing to score: no engine starts")
    rate = night_rate(night, engine) or _measured(job, devices, engine)
    if rate is None:
        return Estimate(0.0, None, 0.0, f"not measured: no night of this table, no calibration of {devices.kind} "
                                        "here and no shipped figure for it; run a night, or runners.capacity --calibrate")
    seconds = rate.seconds_for(images)
    dollars = round(seconds / SECONDS_PER_HOUR * price_per_hour, 4) if price_per_hour is not None else None
    return Estimate(seconds, round(rate.images_per_sec, 2), rate.startup_seconds, rate.source, dollars,
                    "--price-per-hour" if dollars is not None else None)


def night_rate(night: NightPlan, engine: str) -> Rate | None:
    """This table's own rate: its recent nights with this engine and model, else with this engine (None: none ran)."""
    label = model_label(night.options)
    return table_rate(night.output, engine=engine, model=label) or table_rate(night.output, engine=engine)


def rollout_window(seconds: float, output: Location, engine: str, model: str) -> Window:
    """``--rollout-time``'s window at the rate this table's nights measured on ``engine`` with tonight's ``model`` (the
    rows' model label): the older model's rate would size the night for another model's cost. None yet: it says so."""
    rate = table_rate(output, engine=engine, model=model)
    if rate is None:
        return Window(seconds, None, source=f"no night of {model} on {engine} measured on this table yet")
    return Window(seconds, rate.images_per_sec, rate.startup_seconds, rate.source)


def _measured(job: Job, devices: Devices, engine: str) -> Rate | None:
    """A short calibration on tonight's images where the night runs on this machine's kind of device, else the shipped
    rates for the night's GPU (None: neither measured it)."""
    from job.execution import this_machine

    here = this_machine()
    execution = job.execution
    if devices.kind == here.kind and (devices.kind == "cpu" or devices.name == here.name):
        try:
            images, described = calibration.images_to_time(job.pending, job.config, execution.recipe)
        except JobError:
            return None  # raw pixels: nothing to time a decode of
        measured = calibration.measure(execution.model, images, described, device_name=here.name,
                                       precision=execution.precision, batch_size=execution.batch_size,
                                       cpu_resize=execution.cpu_resize, max_pixels=job.config.max_pixels,
                                       model_seconds=CALIBRATION_MODEL_SECONDS, started_at=time.time(),
                                       s3_endpoint_url=job.config.s3_endpoint_url)
        rates = measured.rates(engine)
        vcpus, gpu, where = os.cpu_count() or 1, devices.kind == "cuda", "tonight's images on this machine"
    else:
        rates = shipped.gpu_rates(devices.name or "", engine, execution.model.source, execution.recipe.crop,
                                  execution.precision)
        if rates is None:
            return None
        vcpus, gpu, where = rates.measured_vcpus or 1, True, f"one {devices.name} with {rates.measured_vcpus} vCPUs"
    per_second, limit = unit_rate(rates, vcpus, gpu)
    return Rate(per_second, rates.startup_seconds, f"{where}: {limit} limits it ({rates.startup_source})",
                "calibration" if devices.kind == here.kind else "shipped")
