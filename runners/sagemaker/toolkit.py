"""The real SageMaker PyTorch inference toolkit, run in this process on an unpacked model.tar.gz.

Use for ``--local`` and tests. Inside the container TorchServe hands each request to the
toolkit's ``HandlerService`` with a context object; here ``TorchServeContext`` plays that
part (model dir, request headers, the status and content type the toolkit sets), so the
packaged handler is found, loaded and called exactly as on AWS: ``SAGEMAKER_PROGRAM``
picks the module, ``code/`` comes first on the import path, a missing Accept becomes
``SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT``, and any error in ``input_fn``/``predict_fn``/``output_fn``
is a 500 whose body is its message and trace, with no content type (TorchServe's worker sends
none when the handler set none).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from job.errors import JobError

INSTALL = "pip install 'streaming-batch-inference[sagemaker]'"


@dataclass
class _RequestProcessor:
    headers: Mapping[str, str]

    def get_request_properties(self) -> Mapping[str, str]:
        return self.headers


@dataclass
class TorchServeContext:
    """What the toolkit reads from and writes to TorchServe's per-request context."""

    model_dir: str
    headers: Mapping[str, str] = field(default_factory=dict)
    status: int = 200
    phrase: str = ""
    content_type: str | None = None

    @property
    def system_properties(self) -> dict:
        return {"model_dir": self.model_dir, "gpu_id": None}

    @property
    def request_processor(self) -> list[_RequestProcessor]:
        return [_RequestProcessor(self.headers)]

    def set_response_status(self, code: int = 200, phrase: str = "") -> None:
        self.status, self.phrase = code, phrase

    def set_response_content_type(self, idx: int, value: str) -> None:
        self.content_type = value


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    content_type: str | None  # None: the worker set none (the toolkit's error answers)


class Toolkit:
    """A loaded model behind the toolkit's ``HandlerService``; ``invoke`` is one request."""

    def __init__(self, model_dir: str, container_env: Mapping[str, str]) -> None:
        try:
            from sagemaker_pytorch_serving_container.handler_service import HandlerService
        except ImportError as e:
            raise JobError(f"--local runs the SageMaker PyTorch inference toolkit: {INSTALL}") from e
        self.model_dir = model_dir
        self.service = HandlerService()
        with container_process(model_dir, container_env):
            self.service.initialize(TorchServeContext(model_dir))  # loads the model: model_fn

    def invoke(self, body: bytes, headers: Mapping[str, str]) -> Response:
        context = TorchServeContext(self.model_dir, headers)
        [result] = self.service.handle([{"body": body}], context)
        payload = result if isinstance(result, bytes) else str(result).encode()
        return Response(context.status, payload, context.content_type)


@contextlib.contextmanager
def container_process(model_dir: str, container_env: Mapping[str, str]) -> Iterator[None]:
    """This process as the container's worker while the model loads, then as it was.

    The container variables are set, and code/ comes first on the import path, as the
    toolkit's PYTHONPATH puts it in the container's worker: a module the archive ships wins
    over an installed one of the same name. The toolkit reads both only while it loads the model.
    """
    code_dir = os.path.join(model_dir, "code")
    saved = {name: os.environ.get(name) for name in [*container_env, "PYTHONPATH"]}
    module = os.path.splitext(container_env.get("SAGEMAKER_PROGRAM", "inference.py"))[0]
    sys.modules.pop(module, None)  # another archive's handler must not answer for this one
    os.environ.update(container_env)
    sys.path.insert(0, code_dir)
    try:
        yield
    finally:
        sys.path.remove(code_dir)
        _restore(saved)


def _restore(saved: Mapping[str, str | None]) -> None:
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
