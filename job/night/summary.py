"""The run's lines: what tonight does (``decisions_line``, before any work), and its closing lines on stdout: images,
errors, seconds, images/sec, the timeline, where the output is.

``print_summary(manifest)`` is what every engine's command prints last (``job.driver``), from the manifest alone,
so the lines say what the manifest says.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import TextIO

from job.night.decision import (ADOPT, CHANGED, DROP, KEEP, KEEP_REMOVED, LOST, MISSING, NEW, OVERWRITE, RESCORE, ROLLOUT,
                                SCORE, TIMED_OUT, WITHHELD)
from job.night.manifest import Manifest
from job.night.plan import NightPlan
from job.night.rollout import rollout_line
from job.timeline import Timeline


def print_summary(manifest: Manifest, stream: TextIO | None = None) -> None:
    """The closing lines: images, errors, seconds, images/sec, the timeline, where the output is."""
    stream = stream or sys.stdout
    counts, rate, files = manifest.counts, manifest.images_per_sec, manifest.input_files
    timing = f"in {manifest.seconds:.1f} s = {rate:.1f} images/s" if rate is not None else "(nothing left to run)"
    if files.resumed:
        timing = f"after keeping {files.resumed} of {files.total} input files as earlier runs left them: ran {files.rows_run} images {timing}"
    withheld = f", {counts.withheld} withheld: deleted by another writer" if counts.withheld else ""
    print(f"{manifest.engine}: {counts.rows_out} images ({counts.predicted} predicted, {counts.errored} errors{withheld}) "
          f"{timing}", file=stream)
    if rate is not None:
        print(f"  timeline: {timeline_text(manifest.timeline)}", file=stream)
    if manifest.rollout is not None:
        print(f"  {rollout_line(manifest.rollout)}", file=stream)
    for example in manifest.error_examples:
        print(f"  error row {example['id']}: {example['error']}", file=stream)
    print(f"output: {manifest.output} (manifest: {manifest.manifest})", file=stream)


def decisions_line(night: NightPlan) -> str:
    """What tonight does with the input, by action: ``4 of 12 files to score (2 new, 1 changed, 1 re-scored for a
    rollout); 8 kept; 1 gone, its rows leaving the table``."""
    unit = "file" if night.input.unit == "files" else "object group"
    counts = Counter((d.action, d.reason) for d in night.decisions)
    scored = [(n, words) for (action, reason), words in SCORED.items() if (n := counts[(action, reason)])]
    scoring = sum(n for n, _ in scored)
    listed = sum(d.file is not None for d in night.decisions)
    parts = [f"{scoring} of {_count(listed, unit)} to score" + (f" ({', '.join(f'{n} {w}' for n, w in scored)})" if scored else "")]
    for action, words in LEFT.items():
        if n := sum(count for (a, _), count in counts.items() if a == action):
            parts.append(f"{n} {words}")
    return "; ".join(parts)


# What the night scores, by (action, reason), in the words of decisions_line...
SCORED = {(SCORE, NEW): "new", (SCORE, CHANGED): "changed", (RESCORE, ROLLOUT): "re-scored for a rollout",
          (RESCORE, TIMED_OUT): "re-scored: rows that timed out", (SCORE, MISSING): "whose part is gone",
          (SCORE, LOST): "whose rows a night with no manifest committed", (SCORE, OVERWRITE): "--overwrite"}
# ...and what it does not score.
LEFT = {KEEP: "kept", ADOPT: "adopted from a night that stopped", WITHHELD: "left out: every row deleted by another writer",
        DROP: "gone, their rows leaving the table", KEEP_REMOVED: "gone, kept by --keep-removed"}


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def timeline_text(timeline: Timeline) -> str:
    """``command 21.3 s, startup 9.1 s, steady 3400.0 images/s, device busy 87%``; "n/a" for what was not seen.

    The command's whole time comes first: the summary's "in N s" is the engine's work alone, and
    ``startup`` (from the command to the first model batch) can exceed it on a small input.
    """
    startup = f"{timeline.startup_seconds:.1f} s" if timeline.startup_seconds is not None else "n/a"
    steady = f"{timeline.steady_images_per_sec:.1f} images/s" if timeline.steady_images_per_sec is not None else "n/a"
    busy = f"{timeline.device_busy_fraction:.0%}" if timeline.device_busy_fraction is not None else "n/a"
    return f"command {timeline.wall_seconds:.1f} s, startup {startup}, steady {steady}, device busy {busy}"
