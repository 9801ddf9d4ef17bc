"""``--glue-table DATABASE.TABLE``: after the night's commit, the Delta table registered in AWS Glue's Data Catalog.

Use it when the table's readers find tables by name in Glue: Athena, Redshift Spectrum, EMR. Athena
reads a Delta table natively from a Glue entry that names its location and says
``table_type=DELTA``; it takes rows and columns from the table's own log, so the entry is a
pointer, not a copy. The entry's columns are the log's all the same (Lake Formation's permissions
and Athena's views read them from Glue), so a night whose columns changed updates the entry.

The first night creates the entry; a later night changes it only when its columns changed (one
``UpdateTable``, conditioned on the entry's ``VersionId``): Glue keeps a version per update. The
registration runs after the commit, so a registration that fails leaves the night's table
committed: the error says so, and the next run (even one with nothing new) registers it. A Glue
entry of that name for another location, or one that is not a Delta table, is refused: never
repointed. Credentials and region are the job's (the output bucket's region); the endpoint is
AWS's or ``AWS_ENDPOINT_URL_GLUE`` (boto3's own setting).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from job.cli import RESUME_HINT, run_main
from job.config import GLUE_TABLE_NAME, JobConfig
from job.driver import commands
from job.engine import Engine
from job.errors import JobError
from job.timeline import COMMAND_STARTED_AT
from storage import Location, resolve
from storage.resolve import s3_endpoint

OPTION = "--glue-table"
# Every Glue call the registration makes: terraform/glue.tf's glue_commit policy grants them on its database.
GLUE_ACTIONS = ("GetDatabase", "GetTable", "CreateTable", "UpdateTable")
DELTA = "DELTA"  # Glue's table_type for a Delta table that Athena reads natively
# Delta's primitive types (its log's schema) as Glue's (Hive's) type names.
HIVE_TYPES = {"string": "string", "long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint",
              "float": "float", "double": "double", "boolean": "boolean", "binary": "binary", "date": "date",
              "timestamp": "timestamp", "timestamp_ntz": "timestamp"}


def add_glue_argument(group: argparse._ArgumentGroup) -> None:
    group.add_argument(OPTION, metavar="DATABASE.TABLE",
                       help="after the run's commit, register the --table-format delta table in AWS Glue's Data Catalog "
                            "under this name, so Athena finds it (the database must exist: terraform/glue.tf declares one); "
                            "created on the first run, updated when its columns change")


def with_glue_registration(engine: Engine) -> tuple[Callable[..., dict], Callable[[], int]]:
    """The engine's ``main(argv=None)`` and ``cli()`` (``job.driver.commands``), registering the committed table in
    Glue when ``--glue-table`` names one. After ``main`` returns: the table is committed and the output's lease let go."""
    job_main, _ = commands(engine)

    def main(argv: Sequence[str] | None = None, started_at: float | None = None) -> dict:
        manifest = job_main(argv, started_at=started_at)
        args = engine.args_parser().parse_args(argv)
        if args.glue_table is not None:
            done = register(args.glue_table, args.output, args.s3_endpoint_url)
            print(f"Glue table {args.glue_table} ({args.output}): {done}")
        return manifest

    def cli() -> int:
        return run_main(lambda argv: main(argv, started_at=COMMAND_STARTED_AT), interrupted_hint=RESUME_HINT)

    return main, cli


def check_glue_table(args: argparse.Namespace, config: JobConfig) -> None:
    """Refuse before any work what cannot be registered: not a Delta table on S3, not a name Athena reads, no such
    database, or a Glue entry of that name that is not this table."""
    name = getattr(args, "glue_table", None)
    if name is None:
        return
    if GLUE_TABLE_NAME.fullmatch(name) is None:
        raise JobError(f"{OPTION} must be DATABASE.TABLE of lower-case letters, digits and _ (the names Athena reads), got {name!r}")
    if config.table_format != "delta":
        hint = "--iceberg-catalog glue --iceberg-table commits an Iceberg table in Glue itself" if config.table_format == "iceberg" else \
            "add --table-format delta"
        raise JobError(f"{OPTION} registers a Delta table, and --table-format is {config.table_format}: {hint}")
    if config.output is None or not config.output.startswith("s3://"):
        raise JobError(f"{OPTION}: Athena reads tables on S3, and --output {config.output or '(a temp dir)'} is not an "
                       "s3:// prefix; pass an s3:// --output, or leave --glue-table out")
    if importlib.util.find_spec("boto3") is None:
        raise JobError(f"{OPTION} calls Glue through boto3, which this Python lacks: pip install boto3")
    output = resolve(config.output, config.s3_endpoint_url)
    with glue_errors(name, committed=False):
        _entry(_client(output), name, output)


def register(name: str, output_uri: str, endpoint_url: str | None = None) -> str:
    """Create or update Glue's entry ``name`` for the Delta table at ``output_uri``; returns what was done, in words."""
    output = resolve(output_uri, endpoint_url)
    database, table = name.split(".")
    wanted = table_input(table, location_of(output), delta_schema(output, endpoint_url))
    glue = _client(output)
    with glue_errors(name, committed=True):
        current = _entry(glue, name, output)
        if current is None:
            try:
                glue.create_table(DatabaseName=database, TableInput=wanted)
                return "created"
            except glue.exceptions.AlreadyExistsException:  # another run made it meanwhile: check it as ours
                current = _entry(glue, name, output)
        if _same_columns(current, wanted):
            return "unchanged"
        # Conditioned on the entry's version: a change made meanwhile (another night, a person) makes this one fail whole.
        version = {"VersionId": current["VersionId"]} if current.get("VersionId") else {}
        glue.update_table(DatabaseName=database, TableInput=wanted, **version)
        return "columns updated"


def table_input(table: str, location: str, schema: tuple[list[dict], list[str]]) -> dict:
    """Glue's ``TableInput`` of a Delta table Athena reads natively: its location, ``table_type``, the log's columns."""
    fields, partitioned_by = schema
    columns = [{"Name": f["name"], "Type": hive_type(f["type"])} for f in fields]
    return {
        "Name": table,
        "Description": "Predictions of the nightly batch inference (a Delta table: its log is the truth).",
        "TableType": "EXTERNAL_TABLE",
        "Parameters": {"table_type": DELTA},
        "StorageDescriptor": {"Columns": [c for c in columns if c["Name"] not in partitioned_by], "Location": location},
        "PartitionKeys": [c for c in columns if c["Name"] in partitioned_by],  # Athena needs the list, even empty
    }


def hive_type(delta_type: str | dict) -> str:
    """A Delta log's column type (its JSON schema) as Glue's type name: ``long`` -> ``bigint``, arrays, maps, structs."""
    if isinstance(delta_type, str):
        if delta_type.startswith("decimal"):
            return delta_type.replace(" ", "")
        if delta_type not in HIVE_TYPES:
            raise JobError(f"the Delta table has a column of type {delta_type!r}, which Glue has no name for")
        return HIVE_TYPES[delta_type]
    kind = delta_type["type"]
    if kind == "array":
        return f"array<{hive_type(delta_type['elementType'])}>"
    if kind == "map":
        return f"map<{hive_type(delta_type['keyType'])},{hive_type(delta_type['valueType'])}>"
    return "struct<" + ",".join(f"{f['name']}:{hive_type(f['type'])}" for f in delta_type["fields"]) + ">"


def delta_schema(output: Location, endpoint_url: str | None) -> tuple[list[dict], list[str]]:
    """The table's columns (its log's JSON schema fields) and partition columns, at its latest version."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError, TableNotFoundError

    options = {"AWS_REGION": output.filesystem.region}
    endpoint = s3_endpoint(endpoint_url)
    if endpoint:
        options |= {"AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": str(endpoint.startswith("http://")).lower()}
    try:
        table = DeltaTable(f"s3://{output.path}", storage_options=options)
    except TableNotFoundError as e:
        raise JobError(f"{output.uri} holds no Delta table to register in Glue (no _delta_log/)") from e
    except (DeltaError, OSError) as e:
        raise JobError(f"{output.uri}: the Delta table cannot be read to register it in Glue ({' '.join(str(e).split())[:300]})") from e
    return json.loads(table.schema().to_json())["fields"], list(table.metadata().partition_columns)


def location_of(output: Location) -> str:
    return f"s3://{output.path.rstrip('/')}/"  # a folder: Athena's LOCATION ends with "/"


def _client(output: Location):
    import boto3

    return boto3.client("glue", region_name=output.filesystem.region)  # the table's region: Athena reads it there


def _entry(glue, name: str, output: Location) -> dict | None:
    """Glue's entry ``name`` (None: none yet), once its database is known to exist and the entry to be this table's."""
    database, table = name.split(".")
    try:
        glue.get_database(Name=database)
    except glue.exceptions.EntityNotFoundException as e:
        raise JobError(f"Glue database {database} does not exist in {output.filesystem.region}: create it (terraform/glue.tf "
                       f"declares one), or pass {OPTION} naming a database that exists") from e
    try:
        current = glue.get_table(DatabaseName=database, Name=table)["Table"]
    except glue.exceptions.EntityNotFoundException:
        return None
    kind = current.get("Parameters", {}).get("table_type", "Hive")
    if kind.upper() != DELTA:
        raise JobError(f"Glue table {name} is a {kind} table, not a Delta table: pass another {OPTION}")
    location = current.get("StorageDescriptor", {}).get("Location", "")
    if location.rstrip("/") != location_of(output).rstrip("/"):
        raise JobError(f"Glue table {name} is the table at {location}, not at --output {output.uri}: pass another "
                       f"{OPTION}, or the --output it names")
    return current


def _same_columns(current: dict, wanted: dict) -> bool:
    def columns(entry: dict) -> tuple[list, list]:
        pairs = lambda cs: [(c["Name"], c["Type"]) for c in cs]  # noqa: E731
        return pairs(entry.get("StorageDescriptor", {}).get("Columns", [])), pairs(entry.get("PartitionKeys", []))

    return columns(current) == columns(wanted)


@contextmanager
def glue_errors(name: str, committed: bool) -> Iterator[None]:
    """Glue's own failures (credentials, permissions, an unreachable endpoint) as one line naming the table and the fix;
    ``committed``: after the run's commit, which the line then says is done."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except (BotoCoreError, ClientError) as e:
        done = "the run's table is committed; " if committed else ""
        again = ", then run again (a run with nothing new registers it)" if committed else ""
        raise JobError(f"Glue table {name} cannot be registered ({' '.join(str(e).split())[:300]}); {done}check the AWS "
                       "credentials, the region, and that the role may glue:GetDatabase, GetTable, CreateTable, UpdateTable "
                       f"(terraform/glue.tf){again}") from e
