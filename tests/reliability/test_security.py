"""Security: no credentials in logs, manifests, outputs or error messages; no code run from a
checkpoint; the SageMaker local server listens on loopback only.

Already tested elsewhere, not repeated here: a decompression bomb becomes an error row
(``tests/unit/test_decode.py``, and every engine's output-contract test through the
``png-bomb`` row of ``tests/common/datasets.py``); a pickled module is refused by
``weights_only=True`` (``tests/unit/test_model.py``); the server started without a host binds
127.0.0.1 (``tests/integration/test_sagemaker_server.py``).
"""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import sys
import uuid

import pyarrow.fs as pafs
import pytest
import torch
from torchvision.models import resnet50

from inference import WeightsError, load_model
from runners import sagemaker_job
from job.cli import run_main
from runners.sagemaker.options import options_from_args
from runners.sagemaker.server import start_server
from storage import resolve
from tests.common.datasets import write_mixed
from tests.common.sagemaker import packaged_model_dir

# Credentials only these tests use (the S3 server accepts any), so a leak cannot hide among
# other strings. The access key id is not secret: S3 requests carry it in the clear.
ACCESS_KEY_ID = "AKIAFAKESECURITYTEST"
SECRET = f"fake-secret/{uuid.uuid4().hex}+end"


@pytest.fixture()
def fake_credentials(monkeypatch) -> dict[str, str]:
    credentials = {"AWS_ACCESS_KEY_ID": ACCESS_KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET}
    for name, value in credentials.items():
        monkeypatch.setenv(name, value)
    return credentials


def stored_bytes(uri: str, endpoint: str) -> bytes:
    """Every object under ``uri``, concatenated: manifest, data files, anything left behind."""
    location = resolve(uri, endpoint)
    infos = location.filesystem.get_file_info(pafs.FileSelector(location.path, recursive=True))
    paths = sorted(i.path for i in infos if i.type == pafs.FileType.File)
    assert any(p.endswith("_SUCCESS.json") for p in paths), paths
    return b"".join(location.filesystem.open_input_stream(p).read() for p in paths)


@pytest.mark.slow  # CI: the messages of failing S3 calls (below, whatever the engine) and SageMaker's run
def test_ray_job_under_s3_faults_never_shows_the_secret(s3_bucket, s3_env, fault_proxy, fake_credentials, tmp_path):
    """The whole job in its own process, as a user runs it: with --verbose its Ray workers' output, and
    the AWS SDK's retry log (ARROW_S3_LOG_LEVEL=warn), all reach the captured stdout and stderr."""
    write_mixed(f"s3://{s3_bucket}/images/", s3_env)
    proxy = fault_proxy(fault_rate=0.1, seed=11)
    result = subprocess.run(
        [sys.executable, "-m", "runners.ray_job", "--verbose", "--weights", "random", "--batch-size", "8", "--input",
         f"s3://{s3_bucket}/images/", "--output", f"s3://{s3_bucket}/preds/", "--s3-endpoint-url", proxy.url],
        env={**os.environ, **fake_credentials, "ARROW_S3_LOG_LEVEL": "warn"},
        cwd=pathlib.Path(__file__).parents[2], capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert proxy.faults() > 0 and "Request failed, now waiting" in result.stdout + result.stderr
    assert SECRET not in result.stdout + result.stderr
    assert SECRET.encode() not in stored_bytes(f"s3://{s3_bucket}/preds/", s3_env)


def test_sagemaker_local_run_never_shows_the_secret_and_serves_loopback(s3_bucket, s3_env, fake_credentials, capfd):
    write_mixed(f"s3://{s3_bucket}/images/", s3_env)
    argv = ["--local", "--weights", "random", "--input", f"s3://{s3_bucket}/images/",
            "--output", f"s3://{s3_bucket}/preds/", "--s3-endpoint-url", s3_env]
    assert run_main(sagemaker_job.main, argv) == 0
    out, err = capfd.readouterr()
    assert "serving on http://127.0.0.1:" in err  # --host defaults to loopback
    assert SECRET not in out + err
    assert SECRET.encode() not in stored_bytes(f"s3://{s3_bucket}/preds/", s3_env)


def test_failing_s3_messages_never_show_the_secret(s3_bucket, s3_env, fault_proxy, fake_credentials, monkeypatch, capfd, tmp_path):
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")
    down = fault_proxy(fail_all=True).url
    port = s3_env.rsplit(":", 1)[1]
    cases = {
        "S3 down": ["--input", f"s3://{s3_bucket}/in/", "--output", f"s3://{s3_bucket}/out/", "--s3-endpoint-url", down],
        "no bucket": ["--input", "s3://no-such-bucket/in/", "--output", str(tmp_path / "out"), "--s3-endpoint-url", s3_env],
        # pyarrow itself accepts s3://KEY:SECRET@bucket/; a job must not, or the secret is echoed.
        "key in URI": ["--input", f"s3://{ACCESS_KEY_ID}:{SECRET}@{s3_bucket}/in/", "--output", str(tmp_path / "out")],
        "key in endpoint": ["--input", f"s3://{s3_bucket}/in/", "--output", str(tmp_path / "out"),
                            "--s3-endpoint-url", f"http://{ACCESS_KEY_ID}:{SECRET}@127.0.0.1:{port}"],
        # Local paths only: nothing resolves the endpoint, but the manifest would record it.
        "key in unused endpoint": ["--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
                                   "--s3-endpoint-url", f"http://user:{SECRET}@127.0.0.1:{port}"],
    }
    for case, argv in cases.items():
        assert run_main(sagemaker_job.main, ["--local", "--weights", "random", *argv]) == 2, case
        out, err = capfd.readouterr()
        assert err.startswith("error: ") and SECRET not in out + err, (case, err)
    assert not (tmp_path / "out").exists()


class _TouchOnLoad:
    """A pickled object whose loading creates a file: stands for any code a checkpoint could run."""

    def __init__(self, marker: pathlib.Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return pathlib.Path.touch, (self.marker,)


def test_a_checkpoint_that_runs_code_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "code-ran"
    checkpoint = tmp_path / "evil.pt"
    torch.save({"state_dict": resnet50(weights=None).state_dict(), "extra": _TouchOnLoad(marker)}, checkpoint)
    with pytest.raises(WeightsError, match="not a loadable state dict"):
        load_model(str(checkpoint))
    assert not marker.exists()
    torch.load(checkpoint, weights_only=False)  # the control: without weights_only it runs
    assert marker.exists()


def test_sagemaker_local_server_is_not_reachable_from_the_network(tmp_path):
    assert options_from_args(sagemaker_job.ENGINE.args_parser().parse_args(["--local"])).host == "127.0.0.1"
    address = _non_loopback_address()
    server = start_server(packaged_model_dir(str(tmp_path)))
    try:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((address, server.server_address[1]), timeout=5).close()
        socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=5).close()
    finally:
        server.shutdown()
        server.server_close()


def _non_loopback_address() -> str:
    """This machine's address on its default route (a UDP connect sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: never routed anywhere real
        except OSError:
            pytest.skip("no network interface besides loopback")
        address = probe.getsockname()[0]
    if address.startswith("127."):
        pytest.skip("no network interface besides loopback")
    return address
