"""A cluster in instances, as each engine's deploy files lay it out, and what it costs an hour.

- ray (``deploy/anyscale/compute_config.yaml``): a head that runs the driver, a fixed group of GPU workers (one model
  actor per GPU), and a CPU-only group whose vCPUs decode beside the GPU workers' own.
- spark (``deploy/databricks/databricks.yml``): ``num_workers`` GPU workers (one executor per GPU), and a driver node
  of the same type; each node decodes its own images.
- sagemaker (``deploy/sagemaker/nightly.sh``): ``--instance-count`` instances; the handler's model runs on the first GPU
  of each.
- local: this one machine, its first GPU.
Dollars: instance-hours at list price (``job.costs.prices``); a type without a price makes the total "no price".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from job.costs.prices import Instance
from job.costs.rates import UnitRates
from job.costs.sizing import Cluster, vcpus_to_feed
from job.errors import JobError

ENGINES = ("ray", "spark", "sagemaker", "local")
GPUS_USED = {"ray": None, "spark": None, "sagemaker": 1, "local": 1}  # per instance; None: every GPU of it
# deploy/anyscale/compute_config.yaml's head and CPU-only group (tests/deploy holds these equal to the file).
RAY_HEAD, RAY_CPU_NODE = "m5.2xlarge", "m5.4xlarge"
GPU_WORKERS, CPU_DECODERS, HEAD, DRIVER = "GPU workers", "CPU-only decoders", "head (the driver)", "driver"


@dataclass(frozen=True)
class Nodes:
    """Instances of one type, and what they do."""

    instance: Instance
    count: int
    role: str  # GPU_WORKERS, CPU_DECODERS, HEAD or DRIVER


@dataclass(frozen=True)
class Layout:
    """The instances a cluster takes for one engine."""

    engine: str
    nodes: tuple[Nodes, ...]

    def count(self, role: str) -> int:
        return sum(n.count for n in self.nodes if n.role == role)

    @property
    def unpriced(self) -> list[str]:
        return sorted({n.instance.name for n in self.nodes if n.instance.price is None})

    @property
    def usd_per_hour(self) -> float | None:
        """The whole cluster's list price an hour; None: an instance type without a price."""
        if self.unpriced:
            return None
        return sum(n.count * n.instance.price.usd_per_hour for n in self.nodes)

    def dollars(self, seconds: float) -> float | None:
        hourly = self.usd_per_hour
        return None if hourly is None else round(hourly * seconds / 3600, 2)

    def text(self) -> str:
        """``4 x g5.xlarge (GPU workers) + 2 x m5.4xlarge (CPU-only decoders) + 1 x m5.2xlarge (head (the driver))``."""
        return " + ".join(f"{n.count} x {n.instance.name} ({n.role})" for n in self.nodes if n.count)


def gpus_used(engine: str, instance: Instance) -> int:
    """GPUs of ``instance`` that ``engine`` runs a model on."""
    return GPUS_USED[engine] or instance.gpus


def vcpus_per_gpu(engine: str, rates: UnitRates, instance: Instance | None, asked: int | None,
                  machine_vcpus: int | None = None) -> int:
    """The vCPUs feeding each GPU: ``asked`` (--vcpus-per-gpu) where the engine can have them; else an instance's own
    vCPUs a GPU, to which Ray's CPU-only group adds up to as many as the rates were measured with (else as many as
    feed the model alone); else, for a GPU kind alone, that many; ``machine_vcpus``: this machine's, for its GPU.
    Spark, SageMaker and local decode on the GPU node's own vCPUs: another count on an instance is refused."""
    own = instance.vcpus // gpus_used(engine, instance) if instance is not None else machine_vcpus
    wanted = rates.measured_vcpus or vcpus_to_feed(rates)  # None: a unit measured whole
    if asked is not None:
        if instance is not None and engine != "ray" and asked != own:
            raise JobError(f"--vcpus-per-gpu {asked}: {engine} decodes on the GPU nodes' own vCPUs ({own} a GPU on "
                           f"{instance.name}); choose another --instance")
        return asked
    if own is None:
        return wanted or 1
    return max(own, wanted or 0) if engine == "ray" and instance is not None else own


def layout(engine: str, cluster: Cluster, gpu_instance: Instance, cpu_instance: Instance | None = None,
           head: Instance | None = None) -> Layout:
    """The instances ``cluster`` (GPU units) takes on ``engine``'s deploy layout (see the module docstring)."""
    if engine not in ENGINES:
        raise JobError(f"--engine {engine}: expected one of {', '.join(ENGINES)}")
    if not cluster.gpu or not gpu_instance.gpus:
        raise JobError(f"{gpu_instance.name} has no GPU: the deploy layouts are GPU clusters; name a GPU --instance")
    workers = math.ceil(cluster.units / gpus_used(engine, gpu_instance))
    if engine == "local" and workers > 1:
        raise JobError(f"the local engine runs on one machine: {cluster.units} GPUs need --engine ray or spark")
    nodes = [Nodes(gpu_instance, workers, GPU_WORKERS)]
    if engine == "ray":
        short = cluster.vcpus - workers * gpu_instance.vcpus  # decoders the GPU workers' own vCPUs cannot hold
        if short > 0:
            if cpu_instance is None or cpu_instance.gpus:
                raise JobError("the Ray layout needs a CPU-only instance type for its decoders' group: pass --cpu-instance")
            nodes.append(Nodes(cpu_instance, math.ceil(short / cpu_instance.vcpus), CPU_DECODERS))
        if head is not None:
            nodes.append(Nodes(head, 1, HEAD))
    elif engine == "spark":
        nodes.append(Nodes(gpu_instance, 1, DRIVER))  # databricks.yml: driver_node_type_id is the workers' type
    return Layout(engine, tuple(nodes))
