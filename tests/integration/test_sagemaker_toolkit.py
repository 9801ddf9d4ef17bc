"""The packaged model.tar.gz under the real SageMaker PyTorch inference toolkit.

``HandlerService`` from sagemaker-pytorch-inference (the toolkit the PyTorch image runs),
with TorchServe's per-request context played by ``runners.sagemaker.toolkit``: model load,
a Parquet request, no Accept / ``*/*``, bad bodies, the import path. Its answers are the container's.
"""

from __future__ import annotations

import io
import sys

import pyarrow.parquet as pq
import pytest

from job.rows import OUTPUT_SCHEMA
from runners.sagemaker import container
from runners.sagemaker.serving.codecs import PARQUET
from runners.sagemaker.toolkit import Toolkit
from tests.common.datasets import mixed_rows
from tests.common.sagemaker import packaged_model_dir, shard_body

ROWS = mixed_rows(good=2)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> str:
    return packaged_model_dir(str(tmp_path_factory.mktemp("pkg")), topk=3)


ENV = container.environment(6)  # the model's container variables for the default MaxPayloadInMB


@pytest.fixture(scope="module")
def toolkit(model_dir) -> Toolkit:
    return Toolkit(model_dir, ENV)


@pytest.mark.parametrize("accept", [PARQUET, None, "*/*"], ids=["parquet", "no-accept", "any"])
def test_parquet_request_gets_one_output_row_per_id(toolkit, accept):
    headers = {"Content-Type": PARQUET, **({"Accept": accept} if accept else {})}
    response = toolkit.invoke(shard_body(ROWS), headers)
    assert response.status == 200, response.body[:500]
    assert response.content_type == PARQUET
    table = pq.read_table(io.BytesIO(response.body))
    assert table.schema.equals(OUTPUT_SCHEMA, check_metadata=False)
    assert table.column("id").to_pylist() == [i for i, _ in ROWS]
    assert table.column("topk_labels").to_pylist()[0] is not None and len(table.column("topk_labels")[0]) == 3


@pytest.mark.parametrize(
    ("body", "content_type", "words"),
    [
        (b"garbage", PARQUET, "not a Parquet file"),
        (b"a,b\n1,2\n", "text/csv", "content type 'text/csv' is not supported"),
    ],
    ids=["bad-body", "bad-content-type"],
)
def test_bad_requests_are_500_with_the_reason_first(toolkit, body, content_type, words):
    response = toolkit.invoke(body, {"Content-Type": content_type, "Accept": PARQUET})
    assert response.status == 500
    assert words in response.body.decode().splitlines()[0]
    # The toolkit's handle_error sets no content type; TorchServe's worker then sends none.
    assert response.content_type is None


PROBE_HANDLER = """
import sbi_path_probe

def model_fn(model_dir):
    return sbi_path_probe.WHERE

def input_fn(body, content_type):
    return body

def predict_fn(data, model):
    return model

def output_fn(prediction, accept):
    return prediction.encode(), "text/plain"
"""


def test_the_archives_code_comes_before_installed_modules(model_dir, tmp_path, monkeypatch):
    # In the container the toolkit puts code/ first on PYTHONPATH: a module the archive ships
    # wins over an installed module of the same name. Here one of each, the installed one first.
    installed = tmp_path / "site"
    installed.mkdir()
    (installed / "sbi_path_probe.py").write_text("WHERE = 'installed'\n")
    monkeypatch.syspath_prepend(str(installed))
    code = tmp_path / "model" / "code"
    code.mkdir(parents=True)
    (code / "sbi_path_probe.py").write_text("WHERE = 'archive'\n")
    (code / "probe_handler.py").write_text(PROBE_HANDLER)
    monkeypatch.delitem(sys.modules, "sbi_path_probe", raising=False)
    toolkit = Toolkit(str(tmp_path / "model"), {**ENV, "SAGEMAKER_PROGRAM": "probe_handler.py"})
    response = toolkit.invoke(b"x", {"Content-Type": "text/plain", "Accept": "text/plain"})
    assert (response.status, response.body) == (200, b"archive")


def test_without_a_default_accept_the_toolkit_asks_for_json(model_dir):
    # Why container.environment() sets SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT: the toolkit's own
    # default for a request without Accept is application/json, which the handler cannot write.
    env = {k: v for k, v in ENV.items() if k != "SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT"}
    response = Toolkit(model_dir, env).invoke(shard_body(ROWS[:2]), {"Content-Type": PARQUET})
    assert response.status == 500 and "accept 'application/json' is not supported" in response.body.decode()


def test_a_program_without_model_fn_falls_back_to_the_torchscript_loader(model_dir):
    # What terraform's old SAGEMAKER_PROGRAM=inference.py did: the toolkit imports our
    # `inference` package, finds no model_fn and tries its default loader, which fails.
    env = {**ENV, "SAGEMAKER_PROGRAM": "inference.py"}
    with pytest.raises(ValueError, match=r"Exactly one \.pth or \.pt file"):
        Toolkit(model_dir, env)
