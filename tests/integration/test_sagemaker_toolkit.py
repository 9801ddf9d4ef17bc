"""The packaged model.tar.gz under the real SageMaker PyTorch inference toolkit.

``HandlerService`` from sagemaker-pytorch-inference (the toolkit the PyTorch image runs),
with TorchServe's per-request context played by ``runners.sagemaker.toolkit``: model load,
a Parquet request, no Accept / ``*/*``, bad bodies, the import path. Its answers are the container's.
"""

from __future__ import annotations

import importlib.util
import io
import os
import shutil
import subprocess
import sys
import types
from importlib.metadata import version
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from job.config import JobConfig
from runners.sagemaker import container, package
from runners.sagemaker.serving.codecs import PARQUET
from runners.sagemaker.toolkit import Toolkit
from tests.common.datasets import mixed_rows
from tests.common.sagemaker import archived_schema, image_wheelhouse, packaged_model_dir, shard_body
from tests.common.plans import cpu_execution

ROWS = mixed_rows(good=2)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> str:
    return packaged_model_dir(str(tmp_path_factory.mktemp("pkg")), topk=3)


ENV = container.environment(6)  # the model's container variables for the default MaxPayloadInMB


@pytest.fixture(scope="module")
def toolkit(model_dir) -> Toolkit:
    return Toolkit(model_dir, ENV)


@pytest.mark.parametrize("accept", [PARQUET, None, "*/*"], ids=["parquet", "no-accept", "any"])
def test_parquet_request_gets_one_output_row_per_id(toolkit, model_dir, accept):
    headers = {"Content-Type": PARQUET, **({"Accept": accept} if accept else {})}
    response = toolkit.invoke(shard_body(ROWS), headers)
    assert response.status == 200, response.body[:500]
    assert response.content_type == PARQUET
    table = pq.read_table(io.BytesIO(response.body))
    assert table.schema.equals(archived_schema(model_dir), check_metadata=False)
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


def image_python() -> str:
    """A CPython of the serving image's version (3.12), to run the toolkit's pip install with."""
    wanted = container.PYTHON_VERSION
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = [os.environ.get("SAGEMAKER_IMAGE_PYTHON"), shutil.which(f"python{wanted}"),
                  *sorted(str(p) for p in pyenv.glob(f"versions/{wanted}.*/bin/python{wanted}"))]
    for candidate in filter(None, candidates):
        done = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                              capture_output=True, text=True)
        if done.returncode == 0 and done.stdout.strip() == wanted:  # a pyenv shim without that version fails
            return candidate
    pytest.skip(f"no CPython {wanted} here (the serving image's): `pyenv install {wanted}`, or set SAGEMAKER_IMAGE_PYTHON")


def toolkit_start_up_module(monkeypatch):
    """sagemaker_inference.model_server, whose _install_requirements the container runs at start-up.

    It imports pkg_resources for file paths at import time; setuptools 81+ no longer ships
    it (the image's older setuptools does), so where it is missing a stand-in answers those
    path look-ups. The install step itself is the toolkit's own code.
    """
    try:
        import pkg_resources  # noqa: F401
    except ImportError:
        def resource_filename(package: str, name: str) -> str:
            return os.path.join(os.path.dirname(importlib.util.find_spec(package).origin), name.lstrip("/"))

        monkeypatch.setitem(sys.modules, "pkg_resources", types.SimpleNamespace(resource_filename=resource_filename))
    from sagemaker_inference import model_server

    return model_server


def test_the_toolkit_installs_the_archives_requirements_offline(tmp_path, monkeypatch):
    # The AWS archive (its pyarrow wheel built for the image's CPython 3.12), unpacked as the
    # container does; then the toolkit's own start-up step, model_server._install_requirements
    # (`python -m pip install -r code/requirements.txt`), run by a CPython 3.12 in a fresh
    # environment, with no pip configuration and no index to reach: as under network isolation.
    model_server = toolkit_start_up_module(monkeypatch)
    wheels = sorted(image_wheelhouse(tmp_path / "wheels").glob("*.whl"))
    config = JobConfig(input=None, output=None, weights="random")
    tar = package.build_model_tar(config, cpu_execution(config), str(tmp_path), wheels)
    model = package.unpack(tar, str(tmp_path / "model"))
    venv = tmp_path / "image-python"
    subprocess.run([image_python(), "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    for name in [n for n in os.environ if n.startswith("PIP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # nothing listens there
    monkeypatch.setattr(sys, "executable", str(venv / "bin" / "python"))
    monkeypatch.setattr(model_server, "REQUIREMENTS_PATH", f"{model}/code/requirements.txt")
    model_server._install_requirements()
    installed = subprocess.run([str(venv / "bin" / "python"), "-c", "from importlib.metadata import version; print(version('pyarrow'))"],
                               capture_output=True, text=True, check=True)
    assert installed.stdout.strip() == version("pyarrow")
