"""Ray's own lines kept for --verbose: the native-noise filter on fd 2, and placement facts in their JSON types."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOISE = ("[2026-11-24 02:13:40,425 E 21027 21027] core_worker.cc:2465: Actor with class name: 'MapWorker(x)' and ID: "
         "'daa7' has constructor arguments in the object store and max_restarts > 0. If the arguments ... are lost")

CHILD = f"""
import os, sys
from runners.ray.quiet import dropping_native_noise
with dropping_native_noise():
    os.write(2, b"before\\n[2026-11-24 02:13:40,425 W 1 1] gcs_client.cc:1: a warning of Ray's\\n")
    os.write(2, {NOISE!r}.encode()[:40])  # C++ writes a line in pieces: held until it is whole
    os.write(2, {NOISE!r}.encode()[40:] + b"\\n")
    sys.stderr.write("\\r\\033[Kray: 1/2 images")  # a live progress line: passed on at once, no newline
    sys.stderr.flush()
    print("after", file=sys.stderr)
print("back", file=sys.stderr)
"""


def test_only_the_known_noise_line_is_dropped_from_stderr():
    result = subprocess.run([sys.executable, "-c", CHILD], cwd=REPO, capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stderr == (b"before\n[2026-11-24 02:13:40,425 W 1 1] gcs_client.cc:1: a warning of Ray's\n"
                             b"\r\033[Kray: 1/2 imagesafter\nback\n")


def test_placement_facts_keep_their_json_types():
    """They were strings: "compiled": ["False"], "decoder": ["None"]."""
    # Only this test needs ray (runners.ray.placement imports it); the noise filter above runs without.
    pytest.importorskip("ray", reason="runners.ray.placement needs ray: pip install -e '.[ray]'")
    from runners.ray.placement import distinct_values

    assert distinct_values([False, False]) == [False]
    assert distinct_values([None, "nvjpeg", None]) == ["nvjpeg", None]
    assert distinct_values(["cuda:0", "cpu"]) == ["cpu", "cuda:0"]
