"""A real multi-node Ray cluster on this machine, for tests and benchmarks: ``ray start`` nodes.

A ``ray start --head`` and ``ray start --address`` workers. Each node is one ``ray start --block``
process in a session of its own, with its own ports and the cluster's own temp dir, so it never
meets another Ray on the machine. A node is stopped by killing that process and every process it
started (its raylet, object store, workers, actors), by pid: never ``ray stop``, which stops every
Ray on the machine, other people's too. Token auth on both sides, as Ray 2.60 wants it:
``RAY_AUTH_MODE=token`` and the cluster's ``RAY_AUTH_TOKEN`` in every node's environment and in
``env`` for its clients.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psutil

RAY = str(Path(sys.executable).parent / "ray")
START_TIMEOUT_S = 90.0  # a node's start on a loaded 2-core machine
REPORT_ATTEMPTS = 3  # reports of node types to the GCS before the test fails, printing why

# ray._raylet.GcsClient.report_cluster_config: the call Ray's GCS takes an autoscaler's node types by.
_REPORT = """
import json, sys
from ray._raylet import GcsClient
from ray.core.generated.autoscaler_pb2 import ClusterConfig
config = ClusterConfig()
for group in json.loads(sys.argv[2]):
    added = config.node_group_configs.add(name=group["name"], max_count=group["max_count"])
    added.resources.update({key: int(value) for key, value in group["resources"].items()})
GcsClient(address=sys.argv[1]).report_cluster_config(config.SerializeToString())
"""


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports (each held until all are found, so none comes twice)."""
    probes = [socket.socket() for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("", 0))
        return [probe.getsockname()[1] for probe in probes]
    finally:
        for probe in probes:
            probe.close()


@dataclass
class Node:
    name: str
    process: subprocess.Popen
    log: Path

    def processes(self) -> list[psutil.Process]:
        """The node's ``ray start`` and everything it started (raylet, store, workers), while they live."""
        try:
            root = psutil.Process(self.process.pid)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def runs(self, title: str) -> bool:
        """Whether one of the node's processes has ``title`` in its command line (a Ray actor's title names
        its class, a Ray Data actor's its operator: ``MapBatches(RayClassify)``)."""
        for process in self.processes():
            try:
                if title in " ".join(process.cmdline()):
                    return True
            except psutil.Error:  # it ended while we looked
                continue
        return False

    def kill(self) -> None:
        """The node gone at once, as a lost machine: SIGKILL to every one of its processes, by pid."""
        processes = self.processes()
        for process in processes:
            try:
                process.send_signal(signal.SIGKILL)
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(processes, timeout=10)
        self.process.wait(timeout=10)


@dataclass
class LocalCluster:
    """``with LocalCluster() as cluster:`` a head (no CPU work by default) and ``add_node``'s workers."""

    head_cpus: int = 0
    dashboard: bool = False
    temp_dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="rc-", dir="/tmp")))
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    nodes: list[Node] = field(default_factory=list)
    port: int = 0
    dashboard_port: int = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def dashboard_url(self) -> str:
        return f"http://127.0.0.1:{self.dashboard_port}"

    @property
    def env(self) -> dict[str, str]:
        """The environment of every node and client: token auth with this cluster's token, no usage stats."""
        # PATH: `python` in a submitted job's entrypoint is this virtualenv's, as in an activated one.
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        return {**os.environ, "PATH": path, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token,
                "RAY_USAGE_STATS_ENABLED": "0"}

    def __enter__(self) -> LocalCluster:
        self.port, self.dashboard_port, client = free_ports(3)
        dashboard = ["--include-dashboard", "true", "--dashboard-host", "127.0.0.1", "--dashboard-port",
                     str(self.dashboard_port)] if self.dashboard else ["--include-dashboard", "false"]
        try:
            self._start("head", ["--head", "--port", str(self.port), "--ray-client-server-port", str(client),
                                 *dashboard], self.head_cpus, {})
        except BaseException:
            self.close()
            raise
        return self

    def add_node(self, cpus: int, resources: dict[str, float] | None = None, *, wait: bool = True) -> Node:
        """A worker node with ``cpus`` CPUs and custom ``resources``; ``wait``: until ``ray start`` says it joined."""
        return self._start(f"node{len(self.nodes)}", ["--address", self.address], cpus, resources or {}, wait=wait)

    def _start(self, name: str, role: list[str], cpus: int, resources: dict, *, wait: bool = True) -> Node:
        log = self.temp_dir / f"{name}.log"
        ports = iter(free_ports(6))
        command = [RAY, "start", *role, "--block", "--num-cpus", str(cpus), "--num-gpus", "0",
                   "--resources", json.dumps(resources), "--temp-dir", str(self.temp_dir), "--disable-usage-stats",
                   "--node-manager-port", str(next(ports)), "--object-manager-port", str(next(ports)),
                   "--metrics-export-port", str(next(ports)), "--runtime-env-agent-port", str(next(ports)),
                   "--dashboard-agent-listen-port", str(next(ports)), "--dashboard-agent-grpc-port", str(next(ports)),
                   "--object-store-memory", str(80 * 2**20)]
        with log.open("w") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        node = Node(name, process, log)
        self.nodes.append(node)
        if wait:
            self.wait_started(node)
        return node

    def report_node_types(self, node_types: dict[str, tuple[dict[str, float], int]]) -> None:
        """Report ``{name: (one node's resources, max_count)}`` to the GCS as an autoscaler does; ``{}`` clears them.

        What an autoscaler that knows its node types (Anyscale's) reports, through the same GCS call
        (``ReportClusterConfig``); no node of them will start here. Runs in a process of its own, with
        the cluster's token.
        """
        groups = [{"name": name, "resources": resources, "max_count": most} for name, (resources, most) in node_types.items()]
        for attempt in range(REPORT_ATTEMPTS):  # the GCS refused it once in CI on a loaded machine, cause unseen: say it
            done = subprocess.run([sys.executable, "-c", _REPORT, self.address, json.dumps(groups)], env=self.env,
                                  capture_output=True, text=True, timeout=START_TIMEOUT_S)
            if done.returncode == 0:
                return
            time.sleep(2.0 * (attempt + 1))
        raise RuntimeError(f"the GCS at {self.address} refused the node types report {REPORT_ATTEMPTS} times; the last:\n"
                           f"{done.stderr[-3000:]}")

    def wait_started(self, node: Node) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while "Ray runtime started" not in node.log.read_text():
            if node.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray node {node.name} did not start:\n{node.log.read_text()[-3000:]}")
            time.sleep(0.5)

    def close(self) -> None:
        """Every node killed, workers first; every process of theirs, by pid."""
        for node in reversed(self.nodes):
            node.kill()

    def __exit__(self, *exc: object) -> None:
        self.close()
