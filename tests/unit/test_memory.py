"""Whether a model fits, asked before it loads: the memory there is read from what Linux says (MemAvailable, the
process's cgroup v1 or v2 limit, its address-space limit), the least of them; a model over it refused in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from inference.errors import WeightsError
from inference.memory import GIB, available_memory, require_fits

REPO = Path(__file__).resolve().parents[2]


def machine(root: Path, available_kib: int, cgroup_line: str = "0::/", **files: str) -> tuple[str, str]:
    """A /proc and a /sys/fs/cgroup of ``files`` (path under the cgroup root -> text) under ``root``."""
    proc, cgroup = root / "proc", root / "cgroup"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text(f"MemTotal:       99999999 kB\nMemAvailable:   {available_kib} kB\n")
    (proc / "self" / "cgroup").write_text(cgroup_line + "\n")
    (proc / "self" / "status").write_text("VmSize:     1024 kB\n")
    for name, text in files.items():
        path = cgroup / name.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(proc), str(cgroup)


def test_memavailable_when_no_cgroup_limits_the_process(tmp_path):
    proc, cgroup = machine(tmp_path, 8 * 1024 * 1024, **{"memory.max": "max\n", "memory.current": "5\n"})
    assert available_memory(proc, cgroup) == (8 * GIB, "MemAvailable")


def test_a_cgroup_v2_limit_below_memavailable_is_what_there_is(tmp_path):
    proc, cgroup = machine(tmp_path, 64 * 1024 * 1024, "0::/job.slice",
                           **{"job.slice__memory.max": str(4 * GIB), "job.slice__memory.current": str(GIB)})
    assert available_memory(proc, cgroup) == (3 * GIB, f"cgroup {cgroup}/job.slice/memory.max")


def test_a_cgroup_v1_limit_at_the_mounts_root_inside_a_container(tmp_path):
    proc, cgroup = machine(tmp_path, 64 * 1024 * 1024, "4:memory:/docker/abc",
                           **{"memory__memory.limit_in_bytes": str(2 * GIB), "memory__memory.usage_in_bytes": "0"})
    assert available_memory(proc, cgroup) == (2 * GIB, f"cgroup {cgroup}/memory/memory.limit_in_bytes")


def test_a_model_over_the_memory_there_is_is_refused_naming_both(tmp_path):
    proc, cgroup = machine(tmp_path, 4 * 1024 * 1024)
    require_fits(GIB // 8, "hf:m", proc, cgroup)  # 0.5 GiB of fp32 weights, 0.75 with the margin: fits in 4
    with pytest.raises(WeightsError, match=r"^hf:m: its 1.0 billion parameters need about 5.6 GiB to load \(float32, "
                                           r"1.5x the weights\), and this machine has 4.0 GiB available \(MemAvailable\); "
                                           r"run it where there is more memory$"):
        require_fits(10**9, "hf:m", proc, cgroup)


def test_the_address_space_limit_counts_what_the_process_maps_already():
    """``ulimit -v`` in a process of its own (the cap applies to everything it maps next): what is left under it."""
    if not Path("/proc/self/status").exists():
        pytest.skip("no /proc here: the address-space limit is read from Linux's /proc/self/status")
    code = ("import resource; vm = next(int(line.split()[1]) * 1024 for line in open('/proc/self/status') "
            "if line.startswith('VmSize:')); resource.setrlimit(resource.RLIMIT_AS, (vm + 512 * 2**20, "
            "resource.getrlimit(resource.RLIMIT_AS)[1])); from inference.memory import available_memory; "
            "print(*available_memory(), sep='|')")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    left, what = done.stdout.strip().split("|")
    assert what == "the address-space limit (ulimit -v)" and 0 < int(left) <= 512 * 2**20, done.stderr
