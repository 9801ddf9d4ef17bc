"""The benchmarks' stand-in model: a predictor that computes nothing, put in every engine the same way.

Use it to meter what the pipeline itself costs per image (``benchmarks.per_image_bench``). Only the
model goes: ``job.stages.Classify`` looks up ``inference.load_model`` and ``inference.Predictor`` when
it is built, and ``install()`` points both at the stand-in, so each engine's own stages (Ray's actor
pools, Spark's Arrow UDF and part writer, the local DataLoader loop, ``Classify`` with its time
limit, output rows and timeline) run as in a real job. The stand-in holds each batch for
``STANDIN_HOLD_MS`` per 256 rows (0: a no-op; 12: what an H100 needs for ResNet50 in bf16) and
answers label 0 for every row, as the pipeline meter's stand-in does (``placeholder_predictions``).

How it reaches the processes that build ``Classify`` (``benchmarks.standin_run`` arranges each):
- local: the main process, which calls ``install()`` itself;
- Ray: every worker runs ``install`` as its ``worker_process_setup_hook``, handed to the job's own
  ``ray.init`` in ``RAY_JOB_CONFIG_JSON_ENV_VAR`` (``worker_env``), as ``ray job submit`` hands a job its runtime env;
- Spark: the Python daemon is ``benchmarks.standin_daemon``, which installs it in each forked worker.
"""

from __future__ import annotations

import json
import os
import time
from types import SimpleNamespace

import numpy as np

from inference.spec import ModelSpec

HOLD_ENV = "STANDIN_HOLD_MS"  # milliseconds per 256 rows; read by every process that installs the stand-in
MODEL_BATCH = 256  # the batch the hold is given for
RAY_SETUP_HOOK = "benchmarks.standin_model.install"
RAY_JOB_CONFIG = "RAY_JOB_CONFIG_JSON_ENV_VAR"  # ray._private.runtime_env.constants: a runtime env ray.init merges in


def placeholder_predictions(ok: int, topk: int, embeddings: str | None, embedding_dim: int, labels: bool,
                            random: np.random.Generator) -> SimpleNamespace:
    """What a predictor answers for ``ok`` rows: label 0, score 0, and random embeddings (|N(0, 1)|: they
    compress as little as real pooled features) in ``embeddings``' dtype when asked for."""
    answer = SimpleNamespace(label=np.zeros(ok, np.int64) if labels else None, score=np.zeros(ok, np.float32),
                             topk_labels=np.zeros((ok, topk), np.int64), topk_scores=np.zeros((ok, topk), np.float32),
                             embeddings=None)
    if embeddings is not None:
        answer.embeddings = np.abs(random.standard_normal((ok, embedding_dim), np.float32)).astype(embeddings)  # (ok, D)
    return answer


class StandinPredictor:
    """``inference.Predictor``'s signature and answer, no model: holds the batch, then answers placeholders."""

    def __init__(self, model: ModelSpec, device: object, precision: str, topk: int, *, predictions: bool = True,
                 embeddings: str | None = None, compile: bool = False, batch_size: int | None = None) -> None:
        self.device = device
        self.topk, self.predictions, self.embeddings = topk, predictions, embeddings
        self.embedding_dim = model.embedding_dim  # the model's description (``load_nothing``): its pooled feature's size
        self.hold_seconds = float(os.environ.get(HOLD_ENV, "0")) / 1000
        self.random = np.random.default_rng(0)

    def __call__(self, pixels: np.ndarray) -> SimpleNamespace:
        if self.hold_seconds:
            time.sleep(self.hold_seconds * len(pixels) / MODEL_BATCH)
        return placeholder_predictions(len(pixels), self.topk, self.embeddings, self.embedding_dim, self.predictions,
                                       self.random)


def load_nothing(spec: ModelSpec, **options: object) -> ModelSpec:
    """``inference.load_model``'s stand-in: no weights read, no network built; the description goes on to the predictor."""
    return spec


def install() -> None:
    """In this process, every ``Classify`` built from now on gets the stand-in instead of the model.

    Torch-free: ``inference`` loads its torch modules only when a name is first asked for, and these
    two names are set here first (a decoder process running this never imports torch for it).
    """
    import inference

    inference.Predictor = StandinPredictor
    inference.load_model = load_nothing


def worker_env(hold_ms: float) -> dict[str, str]:
    """The environment a command needs for its engine's workers to install the stand-in too (Ray's through
    its setup hook; Spark's daemon is chosen in ``benchmarks.standin_run``)."""
    runtime_env = {"worker_process_setup_hook": RAY_SETUP_HOOK, "env_vars": {HOLD_ENV: str(hold_ms)}}
    return {HOLD_ENV: str(hold_ms), RAY_JOB_CONFIG: json.dumps({"runtime_env": runtime_env})}
