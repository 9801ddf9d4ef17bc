"""A clock the test moves by hand, for code that takes an injected clock (``clock=time.monotonic``)."""

from __future__ import annotations


class ManualClock:
    """Returns ``now``; a test advances it (``clock.now += 12``) to stand for time passing."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
