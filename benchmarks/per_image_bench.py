"""CPU per image on every engine with the model swapped for a no-op: the pipeline's own cost, and the API's against the command's.

    python -m benchmarks.per_image_bench --ways local,ray,ray-api,spark,spark-api --images 1024,20480 --repeats 3

Each run is ``benchmarks.standin_run`` in a child process (``local``, ``ray``, ``spark``: the command;
``ray-api``, ``spark-api``: a user's ``read_parquet -> classify -> write_parquet``) on the same raw
256x256x3 input, its model the stand-in of ``benchmarks.standin_model`` (a no-op unless ``--hold-ms``).
Its CPU is the whole machine's busy time over the run (``--meter machine``, the default): every
process the run starts (driver, Ray's daemons and workers, Spark's JVM and Python workers, DataLoader
workers) counts, whoever reaps it, so the machine must be quiet (each row records the load before it).
``--meter tree`` counts the run's process tree instead, by ``getrusage(RUSAGE_CHILDREN)`` with this
process as their subreaper; on the 2-vCPU VM it missed most of a user's Ray pipeline (6.3 CPU seconds
for 20,480 images, less than their decode alone) and swung 15-44 s between identical Spark runs, so it
is kept beside the machine's figure in every row, not used for the slope. A run's start-up (interpreters, ``ray.init``, the JVM) costs
the same at any size, so the CPU per image is the slope between two sizes (medians of ``--repeats``),
and so are the images/s. The floor is decode + resize + crop alone, in this process, on the same rows;
overhead = an engine's CPU per image - the floor.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import statistics
import subprocess
import sys
import time

import psutil
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from benchmarks.common import add_results_option, append_result, environment_with_path
from benchmarks.standin_run import WAYS
from job.stages import image_cells
from preprocess import preprocess_batch
from runners import make_dataset

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h: orphans of our children are reparented to us, not to init
ORPHAN_WAIT_S = 60.0  # how long a run's last daemons (Ray's agents, Spark's Python daemon) get to exit
FLOOR_BATCH_ROWS = 64  # rows per preprocess call in the floor: the Ray decoders' block
METERS = {"machine": "machine_cpu_s", "tree": "cpu_s"}  # --meter -> the run's field it reads


def make_inputs(workdir: str, sizes: list[int]) -> dict[int, str]:
    """One raw-format dataset per size (256 rows a file, seed 0)."""
    inputs = {}
    for images in sizes:
        inputs[images] = f"{workdir}/in-{images}"
        if not os.path.isdir(inputs[images]):
            make_dataset.main(["--output", inputs[images], "--images", str(images), "--format", "raw"])
    return inputs


def become_subreaper() -> None:
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed: this benchmark needs Linux")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def machine_cpu() -> float:
    """Busy CPU seconds of the whole machine since boot: every process, whoever reaps it (a quiet machine's meter)."""
    times = psutil.cpu_times()
    return sum(getattr(times, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq", "steal"))


def reap_orphans(before: set[int]) -> list[str]:
    """Wait for the run's leftover processes (now ours) to exit; returns those still running after ``ORPHAN_WAIT_S``.

    ``before``: this process's children before the run (multiprocessing's resource tracker), not waited for.
    """
    deadline = time.monotonic() + ORPHAN_WAIT_S
    while time.monotonic() < deadline:
        left = [p for p in psutil.Process().children() if p.pid not in before]
        for process in left:
            try:
                os.waitpid(process.pid, os.WNOHANG)
            except ChildProcessError:
                pass
        if not left:
            return []
        time.sleep(0.2)
    return [f"{p.pid} {p.name()}" for p in psutil.Process().children() if p.pid not in before]


def measured_run(way: str, source: str, target: str, hold_ms: float) -> dict:
    """One run in a child process: its process tree's CPU seconds, wall seconds and output rows."""
    before = {p.pid for p in psutil.Process().children()}
    load, cpu, busy, started = os.getloadavg()[0], children_cpu(), machine_cpu(), time.perf_counter()
    command = [sys.executable, "-m", "benchmarks.standin_run", way, "--input", source, "--output", target,
               "--hold-ms", str(hold_ms)]
    # The stand-in model lives in benchmarks/: Ray's and Spark's worker processes inherit the run's PYTHONPATH.
    env = environment_with_path(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{way} on {source} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    wall = time.perf_counter() - started
    left = reap_orphans(before)
    machine_s = machine_cpu() - busy  # read before counting rows: that read is ours, not the run's
    rows = pads.dataset(target, format="parquet").count_rows()
    return {"cpu_s": round(children_cpu() - cpu, 3), "machine_cpu_s": round(machine_s, 3), "wall_s": round(wall, 3),
            "images": rows, "load_1min": load, "left_running": left}


def floor_ms_per_image(source: str) -> dict[str, float]:
    """Decode + resize + crop of the same rows in one process (CPU ms a row), and with reading the Parquet too."""
    files = sorted(f.path for f in pads.dataset(source, format="parquet").get_fragments())
    batches = [b for f in files for b in pq.ParquetFile(f).iter_batches(FLOOR_BATCH_ROWS)]
    rows = sum(b.num_rows for b in batches)
    started = time.process_time()
    for batch in batches:
        preprocess_batch(image_cells(batch.column("image"), raw=True), raw_shapes=_shapes(batch))
    alone = time.process_time() - started
    started = time.process_time()
    for f in files:
        for batch in pq.ParquetFile(f).iter_batches(FLOOR_BATCH_ROWS):
            preprocess_batch(image_cells(batch.column("image"), raw=True), raw_shapes=_shapes(batch))
    with_read = time.process_time() - started
    return {"decode_resize": round(1000 * alone / rows, 3), "read_decode_resize": round(1000 * with_read / rows, 3)}


def _shapes(batch) -> list[tuple[int, int, int]]:
    return list(zip(*(batch.column(c).to_pylist() for c in ("height", "width", "channels"))))


def slope(runs: dict[int, list[dict]], key: str) -> float:
    """Per image of the larger size beyond the smaller: the medians' difference over the images' difference."""
    (small, at_small), (large, at_large) = sorted(runs.items())
    return (statistics.median(r[key] for r in at_large) - statistics.median(r[key] for r in at_small)) / (large - small)


def way_row(way: str, runs: dict[int, list[dict]], floor: dict, hold_ms: float, meter: str) -> dict:
    cpu_ms = 1000 * slope(runs, METERS[meter])
    return {"benchmark": "per_image", "way": way, "meter": meter, "hold_ms_per_256": hold_ms, "sizes": sorted(runs),
            "cpu_ms_per_image": round(cpu_ms, 3), "tree_cpu_ms_per_image": round(1000 * slope(runs, "cpu_s"), 3),
            "machine_cpu_ms_per_image": round(1000 * slope(runs, "machine_cpu_s"), 3),
            "floor_ms_per_image": floor["decode_resize"],
            "overhead_ms_per_image": round(cpu_ms - floor["decode_resize"], 3),
            "marginal_images_per_sec": round(1 / slope(runs, "wall_s"), 1),
            "runs": {str(size): found for size, found in sorted(runs.items())}}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ways", default="local,ray,ray-api,spark,spark-api", help=f"comma-separated, of {', '.join(WAYS)}")
    parser.add_argument("--images", default="1024,5120", help="the two sizes the slope is taken between (default: 1024,5120)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each way at each size; the median counts (default: 3)")
    parser.add_argument("--hold-ms", type=float, default=0.0, help="stand-in model time per batch of 256 (default: 0, a no-op)")
    parser.add_argument("--workdir", default="/tmp/per-image-bench", help="inputs (kept for the next run) and outputs")
    parser.add_argument("--meter", choices=sorted(METERS), default="machine",
                        help="whose CPU a run costs: the whole machine's busy time (default; needs a quiet machine) or "
                             "its process tree's by getrusage (blind to processes another subreaper reaps)")
    parser.add_argument("--note", default="")
    add_results_option(parser)
    args = parser.parse_args(argv)
    ways, sizes = args.ways.split(","), sorted(int(n) for n in args.images.split(","))
    if len(sizes) != 2 or not set(ways) <= set(WAYS):
        parser.error(f"--images takes two sizes and --ways names of {', '.join(WAYS)}")
    become_subreaper()
    inputs = make_inputs(args.workdir, sizes)
    floors = [floor_ms_per_image(inputs[sizes[0]]) for _ in range(args.repeats)]
    floor = {key: statistics.median(f[key] for f in floors) for key in floors[0]}  # median of --repeats, as the runs
    runs: dict[str, dict[int, list[dict]]] = {way: {size: [] for size in sizes} for way in ways}
    for repeat in range(args.repeats):  # ways and sizes interleaved, so a burst of load spreads over all of them
        for way in ways:
            for size in sizes:
                target = f"{args.workdir}/out-{way}-{size}-{repeat}"
                subprocess.run(["rm", "-rf", target], check=True)
                runs[way][size].append(measured_run(way, inputs[size], target, args.hold_ms))
                print(f"{way} {size} #{repeat}: {runs[way][size][-1]}", flush=True)
    append_result(args.results, {"benchmark": "per_image_floor", "images": sizes[0], **floor, "note": args.note})
    rows = [append_result(args.results, {**way_row(way, runs[way], floor, args.hold_ms, args.meter), "note": args.note})
            for way in ways]
    print(f"floor (decode + resize + crop, one process): {floor} CPU ms/image")
    for row in rows:
        print(f"{row['way']}: {row['cpu_ms_per_image']} CPU ms/image, overhead {row['overhead_ms_per_image']} ms beyond the "
              f"floor, {row['marginal_images_per_sec']} images/s (marginal)")
    return rows


if __name__ == "__main__":
    main()
