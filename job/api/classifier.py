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

from collections.abc import Sequence

import pyarrow as pa

from job.api.options import api_config, api_execution
from job.api.rows import chunks, contract_table, preprocess_rows, unique_ids
from job.errors import JobError
from job.execution import Capabilities, this_machine
from job.output.rows import output_schema
from job.stages import Classify, Preprocess

# One process decodes and then computes, so no device tells the decoder how hungry it is:
# decode="auto" keeps its starting split.
CAPABILITIES = Capabilities(adapts_auto=False)


class Classifier:
    """The model, loaded once; each call classifies a list (or an Arrow array) of images.

    ``options``: the command's options by their Python names (``job.api.API_OPTIONS``), with the
    command's defaults: ``weights="imagenet"``, ``arch``, ``labels``, ``embeddings="off"|"with"|"only"``,
    ``batch_size``, ``decode``, ``precision``, ``compile``, ``topk``, ``raw_shape``, ``resize``, ``crop``, ...
    A bad one raises ``job.errors.JobError``, one line naming it and the fix.
    """

    def __init__(self, **options: object) -> None:
        self.config = api_config(options)
        self.execution = api_execution(self.config, CAPABILITIES, this_machine(), engine="Classifier")
        self._preprocess = Preprocess(self.config, self.execution)
        self._classify = Classify(self.config, self.execution)

    @property
    def schema(self) -> pa.Schema:
        """The columns every call returns (``job.output.rows.output_schema``)."""
        return output_schema(self.execution)

    def __call__(self, images: Sequence[bytes] | pa.Array | pa.ChunkedArray, ids: Sequence[str] | None = None) -> pa.Table:
        """One output row per image, in order: encoded bytes (or raw uint8 pixels with ``raw_shape``).

        ``ids``: one string per image; default ``"0"``, ``"1"``, ... (the images' positions in this call).
        A bad image becomes a row with ``error`` set, as in the command's output.
        """
        column = images if isinstance(images, (pa.Array, pa.ChunkedArray)) else pa.array(list(images))
        names = [str(row) for row in range(len(column))] if ids is None else [str(i) for i in ids]
        if len(names) != len(column):
            raise JobError(f"ids: {len(names)} ids for {len(column)} images; pass one id per image, or none")
        records = pa.table({self.config.image_column: column, self.config.id_column: pa.array(names, pa.string())})
        tables = [self._classify(preprocess_rows(self._preprocess, chunk, unique_ids))
                  for chunk in chunks(records, self.execution.batch_size)]
        if not tables:
            return self.schema.empty_table()
        return contract_table(pa.concat_tables(tables), self.execution)
