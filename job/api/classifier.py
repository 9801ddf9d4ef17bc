"""``Classifier``: the job's preprocessing and model in this process, for a notebook or a test.

    from job.api import Classifier

    classify = Classifier(weights="imagenet", embeddings="with")
    table = classify([open("cat.jpg", "rb").read(), open("dog.png", "rb").read()], ids=["cat", "dog"])
    table.column("label_name")  # ["tabby", "Labrador retriever"]

The same stages (``job.stages``), the same plan (``job.execution.decide``, for this machine: its
first GPU, else the CPU) and the same output columns as ``python -m runners.local_job`` on the
same images; nothing is read or written.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import pyarrow as pa

from job.api.columns import LIST, READABLE, kind_of, with_image_column
from job.api.options import api_config, api_configs, api_execution, python_arguments
from job.api.rows import chunks, contract_table, ids_of, preprocess_rows, preprocess_rows_many
from job.config import JobConfig
from job.errors import JobError
from job.execution import Capabilities, this_machine
from job.input.unique_ids import repeat_line
from job.output.rows import output_schema
from job.several.stages import ClassifyMany, recipe_groups
from job.stages import Batch, Preprocess

# One process decodes and then computes, so no device tells the decoder how hungry it is:
# decode="auto" keeps its starting split.
CAPABILITIES = Capabilities(adapts_auto=False)
Images = Sequence[bytes] | pa.Array | pa.ChunkedArray | pa.Table | pa.RecordBatch


class Classifier:
    """The model (or models), loaded once; each call classifies a list, an Arrow array or an Arrow table of images.

    ``options``: the command's options by their Python names (``job.api.API_OPTIONS``), with the
    command's defaults: ``model="resnet50"`` (or ``"timm:NAME"``, ``"hf:PATH"``, an MLflow ``"models:/NAME@ALIAS"``),
    ``weights`` (the model's own: ``"imagenet"`` for a torchvision name), ``labels``,
    ``embeddings="off"|"with"|"only"``, ``batch_size``, ``decode``, ``precision``, ``compile``, ``topk``, ``raw_shape``, ``resize``, ``crop``, ...
    ``models=[{...}, {...}]``: several models, each entry its own options (the others hold for every model); each image
    is decoded once for them all, and a call returns a list of tables, one a model, each as that model alone returns it.
    A bad one raises ``job.errors.JobError``, one line naming it and the fix.
    """

    def __init__(self, models: list[dict] | None = None, **options: object) -> None:
        self.several = models is not None
        entries = api_configs(options, models) if self.several else [(options, api_config(options))]
        self.options, self.config = entries[0]
        self.executions = [api_execution(config, CAPABILITIES, this_machine(), engine="Classifier", options=given)
                           for given, config in entries]
        self.execution = self.executions[0]
        self.recipes, self.groups = recipe_groups(self.executions)
        self._classify = ClassifyMany(self.config, self.executions)

    @property
    def schema(self) -> pa.Schema:
        """The columns every call returns (``job.output.rows.output_schema``; several models: the first's)."""
        return output_schema(self.execution)

    def __call__(self, images: Images, ids: Sequence[str] | None = None) -> pa.Table | list[pa.Table]:
        """One output row per image, in order (several models: a table a model, in the order of ``models=``).

        ``images``: encoded bytes (or raw uint8 pixels with ``raw_shape``), as a list or an Arrow
        array; or an Arrow table whose image column is found as the engines' calls find it
        (``image_column=``, else ``image``, else its one column of images: a uint8 tensor or
        Spark's image struct too), with its ``id_column`` as the ids. ``ids``: one string per image,
        each once; default: the table's id column, else ``"0"``, ``"1"``, ... (positions in this call).
        A bad image becomes a row with ``error`` set, as in the command's output.
        """
        config, records = self._records(images)
        names = self._ids(records, config, ids)
        records = records.select([c for c in records.column_names if c != config.id_column])
        records = records.append_column(config.id_column, pa.array(names, pa.string()))
        preprocess = Preprocess(config, self.execution, recipes=self.recipes)
        tables: list[list[pa.Table]] = [[] for _ in self.executions]
        rows = max(execution.batch_size for execution in self.executions)
        for chunk in chunks(records, rows):
            for batch in self._batches(preprocess, chunk):
                for model, table in self._classify(batch):
                    tables[model].append(contract_table(table, self.executions[model]))
        out = [pa.concat_tables(t) if t else output_schema(e).empty_table() for t, e in zip(tables, self.executions)]
        return out if self.several else out[0]

    def _batches(self, preprocess: Preprocess, chunk: pa.Table) -> list[Batch]:
        """One chunk of rows through the CPU stage: one batch (one model), or a batch a recipe from one decode."""
        if not self.several:
            return [preprocess_rows(preprocess, chunk, _no_fallback)]
        return preprocess_rows_many(preprocess, chunk, _no_fallback)

    def _records(self, images: Images) -> tuple[JobConfig, pa.Table]:
        """The images as a table of the image column (and the table's others), with the config that reads it."""
        if isinstance(images, (pa.Table, pa.RecordBatch)):
            table = pa.table(images)
            with python_arguments(self.options):
                return with_image_column(self.config, table.schema, named="image_column" in self.options), table
        column = images if isinstance(images, (pa.Array, pa.ChunkedArray)) else pa.array(list(images))
        if pa.types.is_null(column.type):  # no images, or only None: no type to read, and no image to read it in
            column = column.cast(pa.binary())
        kind = kind_of(column.type)
        if kind is None or (kind == LIST and self.config.raw_shape is None):
            need = "pass raw_shape=(H, W, C) with lists of raw pixels" if kind == LIST else f"the job reads {READABLE}"
            raise JobError(f"images: an array of {column.type}; {need}")
        table = pa.table({self.config.image_column: column})
        with python_arguments(self.options):
            return with_image_column(self.config, table.schema, named=True), table

    def _ids(self, records: pa.Table, config: JobConfig, ids: Sequence[str] | None) -> list[str]:
        """The rows' ids: ``ids``, else the table's id column, else positions; refused when one repeats."""
        if ids is not None:
            names, argument = [str(i) for i in ids], "ids"
            if len(names) != records.num_rows:
                raise JobError(f"ids: {len(names)} ids for {records.num_rows} images; pass one id per image, or none")
        elif config.id_column in records.column_names:
            names, argument = ids_of(records, config.id_column, _no_fallback), f"id_column={config.id_column!r}"
        else:
            return [str(row) for row in range(records.num_rows)]
        _refuse_repeats(names, argument)
        return names


def _refuse_repeats(names: list[str], argument: str) -> None:
    """As the command refuses an input whose ids repeat: the output holds each id once."""
    rows: dict[str, list[int]] = defaultdict(list)
    for row, name in enumerate(names):
        rows[name].append(row)
    twice = {name: where for name, where in rows.items() if len(where) > 1}
    if twice:
        name, where = next(iter(twice.items()))
        extra = sum(len(w) - 1 for w in twice.values())
        raise JobError(f"{argument}: ids are not unique: {repeat_line(name, [f'row {r}' for r in where], len(twice), extra)}; "
                       f"the output holds each id once: pass unique ids, or none (each row's position)")


def _no_fallback(rows: int) -> list[str]:
    raise AssertionError("Classifier gives every row its id before the stages")  # ids are set in __call__
