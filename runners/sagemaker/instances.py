"""What a SageMaker instance type computes on: its GPU (by family), or its CPU.

Use ``devices_of(instance_type)`` for the driver's plan of an AWS transform (``job.execution``):
the model runs on the instance, out of the driver's sight, so the plan is read from the type.
"""

from __future__ import annotations

import re

from job.execution import Devices

# ml.<family>.<size> -> the family's GPU, for the families SageMaker Batch Transform offers.
GPU_FAMILIES = {
    "p3": "V100", "p3dn": "V100", "g4dn": "T4", "g5": "A10G", "g6": "L4", "g6e": "L40S",
    "p4d": "A100", "p4de": "A100", "p5": "H100", "p5e": "H200", "p5en": "H200",
}
_FAMILY = re.compile(r"^ml\.([a-z0-9]+)\.")


def devices_of(instance_type: str) -> Devices:
    """The instance's GPU when its family has one, else its CPU (ml.m5, ml.c6i...)."""
    match = _FAMILY.match(instance_type)
    family = match.group(1) if match else ""
    if family in GPU_FAMILIES:
        return Devices("cuda", GPU_FAMILIES[family])
    if family.startswith(("g", "p")):  # a GPU family newer than this table: a GPU of unknown type (fp16)
        return Devices("cuda")
    return Devices("cpu")
