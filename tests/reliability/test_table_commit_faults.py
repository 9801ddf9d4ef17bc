"""A Delta or Iceberg commit that the store refuses: the run stops in one line naming the table and ``--resume``,
the table stays at its previous version, and ``--resume`` commits the night once (local engine, moto behind the
fault proxy, which denies every write to the format's own folder for one run)."""

from __future__ import annotations

import pytest

from job.cli import run_main
from runners import local_job
from tests.integration.checks_scenarios import job_args
from tests.integration.incremental_scenarios import write_night
from tests.integration.table_scenarios import read_delta, read_iceberg

LOCAL = ("--workers", "0")
FIRST_VERSION = {"delta": 0, "iceberg": 1}  # Delta counts from 0; the embedded Iceberg catalog's v<N> files from 1


def main(argv):
    return local_job.main([*argv, *LOCAL])


def stopped(argv: list[str], capsys) -> str:
    """Run the command; assert exit 4 (stopped part-way, --resume finishes it), no traceback and one error line (after
    the run's own lines); return it."""
    capsys.readouterr()
    assert run_main(main, argv) == 4
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and err.endswith(errors[0] + "\n") and "Traceback" not in err, err
    return errors[0].removeprefix("error: ")


def ids(table_format: str, out: str, endpoint: str) -> list[str]:
    table = read_delta(out, endpoint) if table_format == "delta" else read_iceberg(out, endpoint)
    return table.column("id").to_pylist()


@pytest.mark.parametrize("table_format, folder", [("delta", "_delta_log"), ("iceberg", "metadata")])
def test_a_commit_the_store_refuses_leaves_the_last_version_and_resume_commits_once(table_format, folder, s3_bucket,
                                                                                    fault_proxy, capsys):
    proxy = fault_proxy()
    source, out = f"s3://{s3_bucket}/in", f"s3://{s3_bucket}/out"
    args = job_args(source, out, proxy.url, "--table-format", table_format)
    last = write_night(source, proxy.url, 0, 2)
    assert main(args)["table"]["version"] == FIRST_VERSION[table_format]
    write_night(source, proxy.url, 2, 1)
    proxy.deny(lambda method, path: method in ("PUT", "POST") and f"/out/{folder}/" in path)
    line = stopped([*args, "--incremental"], capsys)
    proxy.deny(None)
    name = "Delta" if table_format == "delta" else "Iceberg"
    assert line.startswith(f"{out}: the {name} commit failed; the table stays at version {FIRST_VERSION[table_format]}: "
                           "run again with --resume ("), line
    assert proxy.counts["denied"] >= 1 and sorted(ids(table_format, out, proxy.url)) == sorted(last)
    resumed = main([*args, "--resume"])
    after = ids(table_format, out, proxy.url)
    assert resumed["table"]["version"] == FIRST_VERSION[table_format] + 1, "not one commit"
    assert len(after) == len(set(after)) == resumed["counts"]["rows_out"] == 9
