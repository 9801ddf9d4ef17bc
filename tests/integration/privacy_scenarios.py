"""A shared table's privacy path, as the platform runs it: scenarios the local, Ray and Spark tests run the same way.

Databricks' routine: OPTIMIZE compacts the job's parts into files of its own, then a DELETE by ``source_file``
answers a privacy request, rewriting a compacted file. Delta's writer (delta-rs) writes that file's strings as
``string_view``, pyiceberg's as ``large_string``; the next nights read them. And with image objects as input,
each row's ``source_file`` is its object's key: a DELETE of one key takes one row, which stays deleted while the
object is unchanged, even when its group is scored again for a neighbour's change.

After every night the table holds each input id exactly once (the deleted ones absent), and every row equals
what a fresh run of the same engine writes for it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from job.input.objects import group_objects
from job.output.parts import is_part_name
from job.output.rows import SOURCE
from runners import local_job
from storage import resolve
from tests.common.contract import read_output
from tests.integration.checks_scenarios import files_under, job_args
from tests.integration.incremental_scenarios import write_night
from tests.integration.object_scenarios import SMALL, listed, put_objects
from tests.integration.table_scenarios import delta_options, predictions, read_delta, read_iceberg

Main = Callable[[Sequence[str] | None], dict]
PER_PART = 4  # objects per group: 24 objects make about 6 groups of a few each


def compact(out: str, endpoint: str | None, table_format: str) -> None:
    """The platform's OPTIMIZE: the table's files rewritten into one by its own writer."""
    if table_format == "delta":
        from deltalake import DeltaTable

        DeltaTable(out, storage_options=delta_options(endpoint)).optimize.compact()
    else:
        iceberg_writer(out, endpoint, lambda table: table.overwrite(table.scan().to_arrow()))


def delete_by_source(out: str, endpoint: str | None, table_format: str, source: str) -> None:
    """A privacy request's DELETE of every row of one input file or object, by its lineage."""
    if table_format == "delta":
        from deltalake import DeltaTable

        DeltaTable(out, storage_options=delta_options(endpoint)).delete(f"{SOURCE} = '{source}'")
    else:
        iceberg_writer(out, endpoint, lambda table: table.delete(f"{SOURCE} = '{source}'"))


def iceberg_writer(out: str, endpoint: str | None, write: Callable) -> None:
    """Another pyiceberg writer of the Iceberg table at ``out`` (local or S3): ``write(table)`` committed on its latest
    version, published as a Hadoop catalog publishes (the next ``v<N>.metadata.json``, then the hint)."""
    from pyiceberg.catalog.sql import SqlCatalog

    from job.night.formats.iceberg import io_properties, latest_version, table_uri

    location = resolve(out, endpoint)
    version = latest_version(location)
    catalog = SqlCatalog("theirs", uri="sqlite:///:memory:", **io_properties(location, endpoint))
    catalog.create_namespace("db")
    table = catalog.register_table(("db", "t"), table_uri(location, f"metadata/v{version}.metadata.json"))
    write(table)
    written = catalog.load_table(("db", "t")).metadata_location.removeprefix("s3://").removeprefix("file://")
    with location.filesystem.open_input_stream(written) as f:
        data = f.read()
    for name, content in ((f"metadata/v{version + 1}.metadata.json", data), ("metadata/version-hint.text", str(version + 1).encode())):
        with location.writer(location.join(name)) as sink:
            sink.write(content)


def read_table(out: str, endpoint: str | None, table_format: str) -> pa.Table:
    return read_delta(out, endpoint) if table_format == "delta" else read_iceberg(out, endpoint)


def a_delete_after_a_compaction_then_a_changed_file(main: Main, root: str, endpoint: str | None, table_format: str,
                                                   *engine_args: str) -> None:
    """OPTIMIZE, a DELETE by source of one input file, then nights with a changed file: each ends in exit 0 with
    the table holding every id once, the deleted file's rows absent, every row as a fresh run writes it."""
    source, out = f"{root}/in", f"{root}/out"
    write_night(source, endpoint, 0, 3)
    args = job_args(source, out, endpoint, "--incremental", "--table-format", table_format, *engine_args)
    main(args)
    compact(out, endpoint, table_format)
    delete_by_source(out, endpoint, table_format, "part-00000.parquet")
    others = other_writers_files(out, endpoint)
    assert others, "no file of the other writer's in the table: nothing was tested"
    if table_format == "delta":  # delta-rs's DELETE writes its strings as views; pyiceberg's Parquet holds plain ones
        assert any(pa.types.is_string_view(schema.field(SOURCE).type) for schema in others.values())
    write_night(source, endpoint, 1, 1, prefix="new")  # part-00001 changed
    main(args)
    deleted = {f"img-{i:05d}" for i in range(3)}  # part-00000's ids (write_night)
    holds_what_a_fresh_run_writes(root, endpoint, table_format, absent=deleted)
    write_night(source, endpoint, 2, 1, prefix="newer")  # and then part-00002, beside the rewritten file
    main(args)
    holds_what_a_fresh_run_writes(root, endpoint, table_format, absent=deleted)


def other_writers_files(out: str, endpoint: str | None) -> dict[str, pa.Schema]:
    """The table's data files another writer made (not parts of ours), each with its Arrow schema as read back."""
    location = resolve(out, endpoint)
    names = [name for name in files_under(out, endpoint) if name.endswith(".parquet") and not is_part_name(name)]
    schemas = {}
    for name in names:
        with location.filesystem.open_input_file(location.join(name)) as f:
            schemas[name] = pq.read_schema(f)
    return schemas


def holds_what_a_fresh_run_writes(root: str, endpoint: str | None, table_format: str, recipe: Sequence[str] = (),
                                  absent: set[str] = frozenset()) -> None:
    """The table holds every id a fresh run of the input writes, once, but ``absent``; each row as that run's. The
    fresh run is the local engine's: every engine writes the same rows (runners.compare holds them to it)."""
    table = read_table(f"{root}/out", endpoint, table_format)
    ids = table.column("id").to_pylist()
    assert len(ids) == len(set(ids)), f"ids twice: {sorted(i for i in ids if ids.count(i) > 1)}"
    fresh_out = f"{root}/fresh-{uuid.uuid4().hex[:8]}"
    local_job.main([*job_args(f"{root}/in", fresh_out, endpoint), *recipe, "--workers", "0"])
    fresh = predictions(read_output(fresh_out, endpoint)[0])
    assert set(ids) == set(fresh) - absent
    assert predictions(table) == {i: row for i, row in fresh.items() if i not in absent}


def groups(source: str, endpoint: str | None) -> list[list[str]]:
    """The object groups of ``source`` as the job cuts them with ``PER_PART``: each group's keys, sorted."""
    objects = listed(source, endpoint)
    keys = sorted(objects)
    return [keys[g.start:g.end] for g in group_objects(keys, [objects[k] for k in keys], PER_PART)]


def an_object_deleted_by_key_stays_deleted(main: Main, root: str, endpoint: str | None, table_format: str,
                                           *engine_args: str) -> None:
    """Rows of image objects carry their keys; a DELETE of one key (after an OPTIMIZE) stays deleted through nights
    that score its group again for its neighbours' changes, until the object itself changes: then it is scored once."""
    source, out = f"{root}/in", f"{root}/out"
    keys = [f"{'ab'[i % 2]}/img-{i:03d}.jpg" for i in range(24)]
    put_objects(source, endpoint, keys, seed=1)
    args = job_args(source, out, endpoint, "--incremental", "--table-format", table_format,
                    "--objects-per-part", str(PER_PART), *SMALL, *engine_args)
    main(args)
    table = read_table(out, endpoint, table_format)
    assert table.column(SOURCE).to_pylist() == table.column("id").to_pylist()  # each row's source: its object's key
    victim, neighbour, another = next(group for group in groups(source, endpoint) if len(group) >= 3)[:3]
    compact(out, endpoint, table_format)
    delete_by_source(out, endpoint, table_format, victim)
    for seed, changed in enumerate((neighbour, another), start=11):  # each night scores the victim's group again
        put_objects(source, endpoint, [changed], seed=seed)
        night = main(args)
        holds_what_a_fresh_run_writes(root, endpoint, table_format, SMALL, absent={victim})
        withheld = [entry["withheld"] for entry in night["table"]["files"].values() if entry.get("withheld")]
        assert [[key for key, *_ in entries] for entries in withheld] == [[victim]]
    put_objects(source, endpoint, [victim], seed=99)  # the object itself changed: scored again, once
    main(args)
    holds_what_a_fresh_run_writes(root, endpoint, table_format, SMALL)


def iceberg_other_writer(kind: str, out: str, endpoint: str | None) -> None:
    """Commit to the Iceberg table as the platform would: ``kind`` one of compact, delete, append."""
    from tests.integration.shared_table_scenarios import APPENDED, DELETED

    def append(table) -> None:
        row = table.scan().to_arrow().slice(0, 1)
        for name, value in (("id", APPENDED), (SOURCE, "backfill/0.parquet")):
            column = row.schema.field(name)  # its nullability too: the table's id is required
            row = row.set_column(row.schema.get_field_index(name), column, pa.array([value], column.type))
        table.append(row)

    if kind == "compact":
        compact(out, endpoint, "iceberg")
    elif kind == "delete":
        iceberg_writer(out, endpoint, lambda table: table.delete(f"id = '{DELETED}'"))
    else:
        iceberg_writer(out, endpoint, append)


def an_iceberg_night_with_another_writer_during_it(main: Main, root: str, endpoint: str | None, kind: str, monkeypatch,
                                                  *engine_args: str) -> None:
    """Another writer commits to the Iceberg table while a night runs (before its commit): the night's commit is applied
    on their version; every id once (less the row they deleted, plus the row they appended); a night after changes
    nothing."""
    from job.night import finish
    from tests.integration.incremental_scenarios import delete
    from tests.integration.shared_table_scenarios import APPENDED, DELETED

    source, out = f"{root}/in", f"{root}/out"
    kept = write_night(source, endpoint, 0, 3)[:3]
    args = job_args(source, out, endpoint, "--incremental", "--table-format", "iceberg", *engine_args)
    main(args)
    replaced = write_night(source, endpoint, 1, 1, prefix="new")
    delete(source, endpoint, "part-00002.parquet")
    added = write_night(source, endpoint, 3, 1)
    real = finish.commit_run

    def committing_after_them(*args, **kwargs):
        iceberg_other_writer(kind, out, endpoint)
        return real(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(finish, "commit_run", committing_after_them)
        night = main(args)
    expected = {*kept, *replaced, *added} - ({DELETED} if kind == "delete" else set()) | (
        {APPENDED} if kind == "append" else set())
    ids = read_iceberg(out, endpoint).column("id").to_pylist()
    assert len(ids) == len(set(ids)) and set(ids) == expected
    again = main(args)  # nothing new: nothing committed
    assert again["run_id"] == night["run_id"] and sorted(read_iceberg(out, endpoint).column("id").to_pylist()) == sorted(ids)
