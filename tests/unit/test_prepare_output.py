"""What an existing output prefix means (job.night.held): refuse, clear, or keep the parts of a killed run."""

from __future__ import annotations

import dataclasses

import pyarrow.parquet as pq
import pytest

from job.night.manifest import write_manifest
from job.output.parts import Parts
from job.night.held import list_parts
from job.config import JobConfig
from job.errors import JobError
from job.lease.lease import LEASE_NAME, LeaseOwner, OutputLease
from job.input.plan import InputPlan
from job.night.begin import begin_night
from job.night.held import read_held
from job.night.plan import NightPlan
from job.night.planning import plan_night
from storage import resolve
from tests.common.datasets import write_mixed
from tests.common.parts import a_manifest, job_parts, predictions


@pytest.fixture()
def killed_run(tmp_path):
    """An output where a run committed the first two of its parts and died mid-write of a third."""
    write_mixed(str(tmp_path / "in"), rows_per_file=5)
    parts, files = job_parts(str(tmp_path / "in"), str(tmp_path / "out"))
    for file in files[:2]:
        parts.write(file, predictions([f"{file.path}:{i}" for i in range(file.rows)]))
    (tmp_path / "out" / "_staging" / "run").mkdir(parents=True, exist_ok=True)
    (tmp_path / "out" / "_staging" / "run" / "half-written.tmp").write_bytes(b"PAR1")
    return parts, files


def config(parts: Parts, **changes) -> JobConfig:
    return JobConfig(input=parts.input_root, output=parts.output.path, weights="random", **changes)


def prepare(parts: Parts, config: JobConfig, files) -> NightPlan:
    """The night as the driver plans it for the parts' options, and acts on it before any work."""
    held = read_held(parts.output, config.resume or config.incremental)
    plan = InputPlan(resolve(parts.input_root), tuple(files), None, "image", False)
    night = plan_night(config, plan, held, parts.options, "run")
    begin_night(night, held, config, parts.table_schema)
    return night


def test_a_partial_output_is_refused_without_resume(killed_run):
    parts, files = killed_run
    with pytest.raises(JobError, match="holds a partial output of an earlier run \\(2 committed parts, no _SUCCESS.json\\); "
                                       "pass --resume to finish it or --overwrite to start over"):
        prepare(parts, config(parts), files)


def test_resume_keeps_whole_parts_and_clears_temporaries(killed_run, tmp_path):
    parts, files = killed_run
    night = prepare(parts, config(parts, resume=True), files)
    assert sorted(night.kept) == sorted(parts.name(f) for f in files[:2]) and night.previous is None
    assert not (tmp_path / "out" / "_staging").exists()


def test_resume_runs_a_file_again_when_its_part_no_longer_matches_its_rows(killed_run):
    parts, files = killed_run
    grown = (dataclasses.replace(files[0], rows=files[0].rows + 1), *files[1:])  # as if the input file had grown
    night = prepare(parts, config(parts, resume=True), grown)
    assert list(night.kept) == [parts.name(files[1])]


def test_resume_refuses_parts_of_other_options_or_other_files(killed_run, tmp_path):
    parts, files = killed_run
    other = dataclasses.replace(parts, options={**parts.options, "topk": 3})
    with pytest.raises(JobError, match="was written with other options \\(topk; e.g. topk=5, now 3\\)"):
        prepare(other, config(parts, resume=True, topk=3), files)
    with pytest.raises(JobError, match="belongs to no input file of this plan"):
        prepare(parts, config(parts, resume=True), files[1:])


def test_a_finished_output_with_resume_has_nothing_to_do(killed_run):
    parts, files = killed_run
    finished = a_manifest(output_options=parts.options)
    write_manifest(parts.output, finished)
    with pytest.raises(JobError, match="already holds a finished job \\(_SUCCESS.json\\); pass --incremental to run what the input gained since, --overwrite"):
        prepare(parts, config(parts), files)
    night = prepare(parts, config(parts, resume=True), files)
    assert night.done and night.previous == finished


def test_overwrite_clears_ours_and_foreign_files_are_never_touched(killed_run, tmp_path):
    parts, files = killed_run
    assert prepare(parts, config(parts, overwrite=True), files).kept == {}
    assert list_parts(parts.output) == []
    pq.write_table(predictions(["a"]), tmp_path / "out" / "someone-elses.parquet")
    with pytest.raises(JobError, match="holds files this job did not write \\(e.g. someone-elses.parquet\\)"):
        prepare(parts, config(parts, overwrite=True), files)
    assert (tmp_path / "out" / "someone-elses.parquet").exists()


def test_resume_and_overwrite_contradict():
    with pytest.raises(JobError, match="--resume keeps the output and --overwrite replaces it; pass one of them"):
        JobConfig(input="a", output="b", resume=True, overwrite=True)


def test_overwrite_clears_all_but_the_lease_this_run_holds(killed_run, tmp_path):
    parts, files = killed_run
    lease = OutputLease.acquire(parts.output, LeaseOwner.this_process("run-1"), take_over_expired=True)
    assert prepare(parts, config(parts, overwrite=True), files).kept == {}
    assert [p.name for p in (tmp_path / "out").rglob("*") if p.is_file()] == [LEASE_NAME]
    lease.check()  # still held: --overwrite cleared the output, not the lease


def test_an_output_holding_only_this_runs_lease_is_empty(tmp_path):
    write_mixed(str(tmp_path / "in"), rows_per_file=5)
    parts, files = job_parts(str(tmp_path / "in"), str(tmp_path / "out"))
    OutputLease.acquire(parts.output, LeaseOwner.this_process("run-1"))
    night = prepare(parts, config(parts), files)  # not a partial output: every file runs
    assert not night.kept and not night.clear and len(night.pending.files) == len(files)


def test_resume_refuses_parts_made_under_another_decode_mode_or_recipe(killed_run):
    """Pixels differ by who decoded them (resampling rounding), so the mode is a part option."""
    parts, files = killed_run
    on_gpu, _ = job_parts(parts.input_root, parts.output.path, decode="gpu")
    with pytest.raises(JobError, match="other options \\(decode; e.g. decode='cpu', now 'gpu'\\)"):
        prepare(on_gpu, config(parts, resume=True, decode="gpu"), files)
    other_recipe = dataclasses.replace(parts, options={**parts.options, "recipe": {**parts.options["recipe"], "resize": 256}})
    with pytest.raises(JobError, match="other options \\(recipe; "):
        prepare(other_recipe, config(parts, resume=True), files)


def test_resume_refuses_parts_resized_by_the_other_cpu_path(killed_run):
    """--cpu-resize fast and exact give pixels a fraction of a level apart: a part records which made its rows."""
    parts, files = killed_run
    exact, _ = job_parts(parts.input_root, parts.output.path, cpu_resize="exact")
    with pytest.raises(JobError, match="other options \\(cpu_resize; e.g. cpu_resize='fast', now 'exact'\\)"):
        prepare(exact, config(parts, resume=True, cpu_resize="exact"), files)


def test_a_table_made_before_the_fast_path_reads_as_the_exact_path(killed_run):
    parts, files = killed_run
    earlier = {name: value for name, value in parts.options.items() if name != "cpu_resize"}
    write_manifest(parts.output, a_manifest(output_options=earlier))
    with pytest.raises(JobError, match="other options of the same model \\(cpu_resize; e.g. cpu_resize='exact', now 'fast'\\)"):
        prepare(parts, config(parts, resume=True), files)
    exact, _ = job_parts(parts.input_root, parts.output.path, cpu_resize="exact")
    assert prepare(exact, config(parts, resume=True, cpu_resize="exact"), files).done


def test_a_table_of_parts_laid_out_before_the_lineage_columns_is_refused_naming_overwrite(killed_run):
    parts, files = killed_run
    earlier = {name: value for name, value in parts.options.items() if name != "layout"}
    write_manifest(parts.output, a_manifest(output_options=earlier))
    with pytest.raises(JobError, match="the table's rows were made with other options \\(layout; e.g. layout=None, now 2\\), "
                                       "which give it other columns; .* pass --overwrite to redo it all"):
        prepare(parts, config(parts, resume=True), files)
