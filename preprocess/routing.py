"""``--decode cpu|gpu|auto``: per batch, which screened JPEGs a CPU worker decodes itself.

Use one ``DecodeRouter`` per CPU worker. ``split`` takes the rows the screen (``preprocess.screen``)
passed as device-decodable and returns (decode here, send encoded to the device); rows the screen
refused are always decoded here, so error rows are the CPU path's in every mode.

- ``cpu``: every row decoded here. ``gpu``: every device-decodable row sent encoded.
- ``auto``: a share of them decoded here, adapted from feedback: the device stage's idle fraction
  and input queue (``DeviceFeedback``, sent by the engine) and this worker's own busy fraction
  and decode rate (``record_batch``). Device idle means the CPUs are the bottleneck: decode less
  here. Device backlogged while this worker has headroom: decode more here. One step per
  ``min_interval_s`` at most, because a change takes a few batches to show downstream.

Pure logic: no engine, no torch; the clock is injected, so tests drive it step by step.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

DecodeMode = Literal["cpu", "gpu", "auto"]
DECODE_MODES: tuple[DecodeMode, ...] = ("cpu", "gpu", "auto")


@dataclass(frozen=True)
class DeviceFeedback:
    idle_fraction: float  # share of the last window the device stage waited for input, 0..1
    queued_batches: int  # batches waiting in front of the device stage


@dataclass(frozen=True)
class AutoPolicy:
    # Start even: an H100 decodes ~20k img/s, 16 cores ~4k, so auto moves towards the device fast
    # when the CPUs are short, and stays even when they are not.
    initial_cpu_share: float = 0.5
    step: float = 0.1  # share moved per decision: 5 decisions from even to all-one-side
    idle_high: float = 0.05  # device idle over 5% of the window: it is starved
    queue_high: int = 2  # 2+ batches waiting (and not idle): the device is the bottleneck
    cpu_busy_high: float = 0.9  # this worker busy over 90%: no headroom to decode more
    min_interval_s: float = 2.0  # a decision takes a few batches (~1 s) to show in the feedback

    def __post_init__(self) -> None:
        if not (0 <= self.initial_cpu_share <= 1 and 0 < self.step <= 1 and self.min_interval_s >= 0):
            raise ValueError(f"AutoPolicy needs 0 <= initial_cpu_share <= 1, 0 < step <= 1, min_interval_s >= 0; got {self}")


class DecodeRouter:
    """Splits each batch's device-decodable rows between this CPU worker and the device."""

    def __init__(self, mode: DecodeMode, policy: AutoPolicy = AutoPolicy(), clock: Callable[[], float] = time.monotonic) -> None:
        if mode not in DECODE_MODES:
            raise ValueError(f"--decode {mode!r}: choose one of {', '.join(DECODE_MODES)}")
        self.mode = mode
        self.policy = policy
        self._clock = clock
        self._share = {"cpu": 1.0, "gpu": 0.0, "auto": policy.initial_cpu_share}[mode]
        self._carry = 0.0  # fractional rows owed to the CPU side, so small batches meet the share
        self._window_start = self._last_decision = clock()
        self._busy = self._decode_seconds = 0.0
        self._decoded = 0

    @property
    def cpu_share(self) -> float:
        """Fraction of device-decodable rows decoded on this CPU worker."""
        return self._share

    @property
    def cpu_images_per_sec(self) -> float | None:
        """This worker's measured decode rate (images per second of decode time), None before any."""
        return self._decoded / self._decode_seconds if self._decode_seconds > 0 else None

    def split(self, rows: Sequence[int], pixels: Sequence[int] | None = None) -> tuple[list[int], list[int]]:
        """(rows to decode here, rows to send encoded), each in row order.

        ``pixels``: each row's pixel count (from the screen); the largest go to the CPU, whose
        DCT-scaled decode makes big JPEGs cheap while the device decodes them at full size.
        """
        wanted = self._share * len(rows) + self._carry
        count = min(len(rows), int(wanted))
        self._carry = wanted - count if 0 < self._share < 1 else 0.0
        order = sorted(range(len(rows)), key=lambda i: -pixels[i]) if pixels is not None else range(len(rows))
        here = set(list(order)[:count])
        return [r for i, r in enumerate(rows) if i in here], [r for i, r in enumerate(rows) if i not in here]

    def record_batch(self, busy_seconds: float, decoded: int, decode_seconds: float) -> None:
        """This worker spent ``busy_seconds`` on a batch, ``decode_seconds`` of it decoding ``decoded`` images."""
        self._busy += busy_seconds
        self._decoded += decoded
        self._decode_seconds += decode_seconds

    def cpu_busy_fraction(self) -> float:
        """Share of wall time since the last decision this worker spent on batches."""
        elapsed = self._clock() - self._window_start
        return min(1.0, self._busy / elapsed) if elapsed > 0 else 0.0

    def feedback(self, device: DeviceFeedback) -> None:
        """Adapt ``cpu_share`` (auto mode only) to the device's state and this worker's headroom."""
        now = self._clock()
        if self.mode != "auto" or now - self._last_decision < self.policy.min_interval_s:
            return
        self._share = min(1.0, max(0.0, self._share + self._direction(device) * self.policy.step))
        self._last_decision = self._window_start = now
        self._busy = 0.0

    def _direction(self, device: DeviceFeedback) -> int:
        if device.idle_fraction > self.policy.idle_high:
            return -1  # the device waits for input: the CPUs are short, send it more to decode
        if device.queued_batches >= self.policy.queue_high and self.cpu_busy_fraction() < self.policy.cpu_busy_high:
            return +1  # the device is the bottleneck and this worker has time: decode more here
        return 0
