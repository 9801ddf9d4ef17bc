"""The record of a run that stopped before its manifest, whose parts a later night adopted: ``_history/<run id>.json``.

Every row names the run that made it (``run_id``), and a reader finds that run in ``_history/``. A
night killed before its manifest leaves whole parts; the next ``--resume`` or ``--incremental`` adopts
those its footers prove (``job.night.plan``) instead of scoring their images again, so their rows keep
the stopped run's id. The adopting night records that run (``record_stopped_runs``), before its commit
makes the rows visible: a small JSON naming the stopped run, that it did not finish, whether its commit had landed (a
night killed between its commit and its manifest), the run that adopted its parts, the parts, and the options its
parts recorded. ``mend_history`` writes a finished run's record where a kill left its manifest without one. Rewriting the adopted parts with the new run's id
was the other choice; it would write every adopted part again (a killed night of millions of rows) to change
one column that is true as it stands: the stopped run did make those rows.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping

import pyarrow.fs as pafs

from job.night.manifest import Manifest, copy_manifest
from job.night.record import HISTORY_DIR
from job.night.check import read_part_columns
from storage import Location, storage_errors


def record_stopped_runs(output: Location, adopted: Mapping[str, dict], run_id: str,
                        committed: Collection[str] = ()) -> list[str]:
    """Write ``_history/<run id>.json`` for each run that wrote a part of ``adopted`` (part name -> its footer record)
    and has none there yet; returns the runs recorded. ``committed``: the adopted parts the table's log named already
    (a night killed between its commit and its manifest: its record says so)."""
    runs: dict[str, list[str]] = {}
    for name, record in sorted(adopted.items()):
        made_by = record.get("run_id") or _run_in(output, name)  # parts written before footers named their run
        if made_by and made_by != run_id:
            runs.setdefault(made_by, []).append(name)
    recorded = []
    for stopped, parts in sorted(runs.items()):
        path = output.join(f"{HISTORY_DIR}/{stopped}.json")
        with storage_errors(output.uri_of(path)):
            if output.filesystem.get_file_info(path).type != pafs.FileType.NotFound:
                continue  # its own manifest (it finished after all), or an earlier adoption's record
            _write(output, path, {"run_id": stopped, "finished": False,
                                  "committed": any(part in committed for part in parts), "adopted_by": run_id,
                                  "parts": parts, "output_options": adopted[parts[0]].get("options")})
        recorded.append(stopped)
    return recorded


def mend_history(output: Location, previous: Manifest | None) -> bool:
    """Write the finished manifest ``previous``'s ``_history/`` record if it has none (a night killed between the two,
    by a version that wrote the manifest first); whether it did."""
    if previous is None:
        return False
    name = f"{HISTORY_DIR}/{previous.run_id}.json"
    with storage_errors(output.uri):
        if output.filesystem.get_file_info(output.join(name)).type != pafs.FileType.NotFound:
            return False
    copy_manifest(output, name)
    return True


def _run_in(output: Location, part: str) -> str | None:
    """The run a part's rows name (its first row's ``run_id``; None for a part without rows)."""
    column = read_part_columns(output, part, ["run_id"]).column("run_id")
    return column[0].as_py() if len(column) else None


def _write(output: Location, path: str, record: dict) -> None:
    if not output.is_s3:
        output.filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with output.writer(path) as out:
        out.write(json.dumps(record, indent=2).encode())
