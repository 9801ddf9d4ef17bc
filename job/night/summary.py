"""The run's closing lines on stdout: images, errors, seconds, images/sec, the timeline, where the output is.

``print_summary(manifest)`` is what every engine's command prints last (``job.driver``), from the manifest alone,
so the lines say what the manifest says.
"""

from __future__ import annotations

import sys
from typing import TextIO

from job.night.manifest import Manifest
from job.night.rollout import rollout_line
from job.timeline import Timeline


def print_summary(manifest: Manifest, stream: TextIO | None = None) -> None:
    """The closing lines: images, errors, seconds, images/sec, the timeline, where the output is."""
    stream = stream or sys.stdout
    counts, rate, files = manifest.counts, manifest.images_per_sec, manifest.input_files
    timing = f"in {manifest.seconds:.1f} s = {rate:.1f} images/s" if rate is not None else "(nothing left to run)"
    if files.resumed:
        timing = f"after resuming {files.resumed} of {files.total} files: ran {files.rows_run} images {timing}"
    print(f"{manifest.engine}: {counts.rows_out} images ({counts.predicted} predicted, {counts.errored} errors) {timing}",
          file=stream)
    if rate is not None:
        print(f"  timeline: {timeline_text(manifest.timeline)}", file=stream)
    if manifest.rollout is not None:
        print(f"  {rollout_line(manifest.rollout)}", file=stream)
    for example in manifest.error_examples:
        print(f"  error row {example['id']}: {example['error']}", file=stream)
    print(f"output: {manifest.output} (manifest: {manifest.manifest})", file=stream)


def timeline_text(timeline: Timeline) -> str:
    """``command 21.3 s, startup 9.1 s, steady 3400.0 images/s, device busy 87%``; "n/a" for what was not seen.

    The command's whole time comes first: the summary's "in N s" is the engine's work alone, and
    ``startup`` (from the command to the first model batch) can exceed it on a small input.
    """
    startup = f"{timeline.startup_seconds:.1f} s" if timeline.startup_seconds is not None else "n/a"
    steady = f"{timeline.steady_images_per_sec:.1f} images/s" if timeline.steady_images_per_sec is not None else "n/a"
    busy = f"{timeline.device_busy_fraction:.0%}" if timeline.device_busy_fraction is not None else "n/a"
    return f"command {timeline.wall_seconds:.1f} s, startup {startup}, steady {steady}, device busy {busy}"
