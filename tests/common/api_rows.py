"""The API's rows against the command's: what "the same rows" means for tests of ``runners.*.api`` and ``job.api``.

Predictions equal (labels, names, errors); scores within float rounding of batches cut
differently; embeddings pointing the same way, by the tolerance ``runners.compare.parity`` uses.
"""

from __future__ import annotations

import numpy as np

from runners.compare.parity import MIN_COSINE

PREDICTION_COLUMNS = ("label", "label_name", "topk_labels", "topk_label_names", "error")
SCORE_TOLERANCE = 1e-4  # the same image's scores when batches are cut differently (test_parity's bound)


def assert_same_rows(api_rows: list[dict], command_rows: list[dict]) -> None:
    """``api_rows`` are ``command_rows``, id by id, in any order."""
    command = {row["id"]: row for row in command_rows}
    assert len(api_rows) == len(command) == len({row["id"] for row in api_rows})
    for row in api_rows:
        expected = command[row["id"]]
        assert {c: row.get(c) for c in PREDICTION_COLUMNS} == {c: expected.get(c) for c in PREDICTION_COLUMNS}, row["id"]
        if expected.get("topk_scores") is not None:
            np.testing.assert_allclose(row["topk_scores"], expected["topk_scores"], atol=SCORE_TOLERANCE)
        if expected.get("embedding") is not None:
            assert cosine(row["embedding"], expected["embedding"]) >= MIN_COSINE, row["id"]
        else:
            assert row.get("embedding") is None, row["id"]


def cosine(a: list[float], b: list[float]) -> float:
    x, y = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


# Two models as an API's models= names them: a classifier, and another model's embeddings alone at another size.
TWO_MODELS = [{"model": "resnet18", "weights": "random", "resize": 40, "crop": 32},
              {"model": "resnet50", "weights": "random", "embeddings": "only", "resize": 48, "crop": 40}]


def assert_each_models_rows(several: list[list[dict]], alone: list[list[dict]]) -> None:
    """Each model's rows of a models= call as a call of that model alone gives them."""
    assert len(several) == len(alone)
    for mine, theirs in zip(several, alone):
        assert_same_rows(mine, theirs)
