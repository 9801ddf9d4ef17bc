"""One run per output prefix at a time: a lease object, ``<output>/_lease.json``, that a run renews.

Schedulers retry and double-fire; two runs of one nightly job into one prefix must not
interleave. The driver takes the lease before it looks at the output prefix and holds it to the
manifest::

    lease = OutputLease.acquire(output, LeaseOwner.this_process(run_id), ttl_s,
                                take_over_expired=config.resume or config.overwrite)
    with lease.held():  # renews every ttl/3 in a thread; releases at the end, whatever happened
        ...plan the output, run, verify...
        lease.check()  # still ours: nobody took it over while this run stalled
        ...write the manifest...

The lease is written only by conditional writes (``storage.conditional``): created only where
none exists (S3 ``If-None-Match: *``, a local exclusive create), renewed and taken over only
from the version its writer read (S3 ``If-Match``), so of two runs racing, exactly one wins. A
write of ours whose answer was lost still counts as ours: the lease names its run.
A crashed run stops renewing. Where its holder is provably dead (``LeaseOwner.gone``: same host,
boot and pid namespace as this process, and its pid gone or reused), any run takes its lease over
at once; the output prefix's own rules (``job.night.held``: a partial output needs ``--resume``) still
apply after. Otherwise a second run is refused in one line naming the holder, when its lease
expires and what to do; once it expired, ``--resume`` or ``--overwrite`` (``take_over_expired``)
replaces it. Expiry is wall-clock time: hosts' clocks must agree to well within the TTL (NTP
gives milliseconds).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator

from job.errors import JobError
from job.lease.lease_holder import LeaseOwner, LeaseRecord, take_over_or_refuse
from storage import Location, StorageError
from storage.conditional import create_exclusive, delete_if, read_versioned, replace_if

__all__ = ["DEFAULT_TTL_S", "LEASE_NAME", "LeaseOwner", "LeaseRecord", "OutputLease"]

LEASE_NAME = "_lease.json"
# A crashed run whose death cannot be proved (another host or container) blocks --resume this
# long; a live one renews every third of it, so it survives two renewals lost to an S3 outage
# before anyone may take its prefix.
DEFAULT_TTL_S = 300.0


class OutputLease:
    """A held lease on an output prefix; made by ``acquire``."""

    def __init__(self, location: Location, record: LeaseRecord, version: str, ttl_s: float) -> None:
        self.location, self.record, self.version, self.ttl_s = location, record, version, ttl_s
        self.path = location.join(LEASE_NAME)
        self.uri = location.uri_of(self.path)
        self._lost: JobError | None = None  # set by a renewal that found the lease taken over

    @classmethod
    def acquire(cls, location: Location, owner: LeaseOwner, ttl_s: float = DEFAULT_TTL_S, *,
                take_over_expired: bool = False) -> OutputLease:
        """Take the lease on ``location``, or raise JobError naming the run that holds it and when it expires."""
        if ttl_s <= 0:
            raise ValueError(f"lease TTL must be positive, got {ttl_s}")
        path = location.join(LEASE_NAME)
        while True:
            record = _new_record(owner, ttl_s)
            version = create_exclusive(location, path, record.to_bytes())
            if version is not None:
                return cls(location, record, version, ttl_s)
            current = read_versioned(location, path)
            if current is None:
                continue  # released between our create and our read: try again
            holder = LeaseRecord.from_bytes(location.uri_of(path), current[0])
            if holder.owner == owner:  # our create took effect but its answer was lost; the retry found it
                return cls(location, holder, current[1], ttl_s)
            taking_over = take_over_or_refuse(location.uri_of(path), holder, take_over_expired)
            version = replace_if(location, path, record.to_bytes(), current[1])
            if version is not None:
                print(taking_over, file=sys.stderr)
                return cls(location, record, version, ttl_s)
            # Another run replaced it first: the loop reads the new holder and refuses.

    def renew(self) -> None:
        """Move the expiry ``ttl_s`` ahead; raise JobError if another run took the lease over."""
        record = LeaseRecord(self.record.owner, self.record.acquired_at, time.time() + self.ttl_s)
        version = replace_if(self.location, self.path, record.to_bytes(), self.version)
        if version is None and self._still_ours():  # an earlier renewal took effect unanswered: from its version
            version = replace_if(self.location, self.path, record.to_bytes(), self.version)
        if version is None:
            raise self._lost_error()
        self.record, self.version = record, version

    def check(self) -> None:
        """Raise JobError unless this run still holds the lease (call it before writing the manifest)."""
        if self._lost is not None or not self._still_ours():
            raise self._lost or self._lost_error()

    def _still_ours(self) -> bool:
        """Whether the lease object names this run; adopts its version if so.

        Only this run writes its owner (the run id is new each run), so a version of ours that
        this object does not know is a write whose answer was lost (a timeout, a reset) after it
        took effect: the store has it, and a retried conditional write would fail against it.
        """
        current = read_versioned(self.location, self.path)
        if current is None:
            return False
        record = LeaseRecord.from_bytes(self.uri, current[0])
        if record.owner != self.record.owner:
            return False
        self.record, self.version = record, current[1]
        return True

    def release(self) -> bool:
        """Delete the lease if it is still this run's; False when it no longer was."""
        return delete_if(self.location, self.path, self.version)

    @contextlib.contextmanager
    def held(self) -> Iterator[OutputLease]:
        """Renew every ttl/3 while the block runs; release after it, whether it succeeded or failed."""
        stop = threading.Event()
        renewer = threading.Thread(target=self._renew_until, args=(stop,), name="output-lease", daemon=True)
        renewer.start()
        try:
            yield self
        except BaseException:
            stop.set()
            renewer.join()
            self._release_after_failure()
            raise
        stop.set()
        renewer.join()
        self.release()

    def _release_after_failure(self) -> None:
        """Release while the block's own error propagates; that error is the one the user must see.

        If the store cannot be reached now (often what the block died of), the lease is left to
        expire, as a crashed run's would: ``--resume`` takes it over then.
        """
        try:
            self.release()
        except StorageError:
            pass

    def _renew_until(self, stop: threading.Event) -> None:
        while not stop.wait(self.ttl_s / 3):
            try:
                self.renew()
            except StorageError:
                continue  # the store is unreachable now; the next tick tries again, well before expiry
            except JobError as e:
                self._lost = e
                return

    def _lost_error(self) -> JobError:
        current = read_versioned(self.location, self.path)
        holder = "nobody (it was deleted)" if current is None else str(LeaseRecord.from_bytes(self.uri, current[0]).owner)
        return JobError(f"{self.uri}: this run ({self.record.owner}) lost its lease on the output; it is now held by "
                        f"{holder}; no manifest is written by this run")


def _new_record(owner: LeaseOwner, ttl_s: float) -> LeaseRecord:
    now = time.time()
    return LeaseRecord(owner, now, now + ttl_s)
