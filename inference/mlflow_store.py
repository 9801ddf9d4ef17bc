"""MLflow's store, as the driver resolves it and before MLflow touches it: ``absolute_store``, ``check_store``. Torch-free.

A worker reads a model from the store the driver found it in, so a local store's URI is made absolute
(``absolute_store``: a worker's working directory is not the driver's). A local store is checked first
(``check_store``): MLflow creates a missing sqlite file (and its folder) as an empty registry on first use, then says
the model is not found, and retries a folder or a file that is not a database for minutes; each is one line here.
"""

from __future__ import annotations

import os

from inference.errors import WeightsError

SQLITE = "sqlite:///"  # then a relative path; sqlite://// is an absolute one
SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every sqlite database file


def absolute_store(uri: str) -> str:
    """A local store's URI with an absolute path: a worker's working directory is not the driver's. Other stores
    (``databricks``, ``databricks-uc``, ``http://...``) as they are."""
    if uri.startswith(SQLITE) and not uri.startswith(SQLITE + "/"):
        return SQLITE + os.path.abspath(uri[len(SQLITE):])
    if "://" not in uri and uri.startswith((".", "/")):  # a folder of files, as MLflow takes a plain path
        return os.path.abspath(uri)
    return uri


def check_store(uri: str) -> None:
    """WeightsError when a local store (a sqlite file, a folder of files) is missing, or a sqlite store is a folder or
    not a database: checked before MLflow would create one, or retry one for minutes."""
    path = uri[len(SQLITE):].split("?", 1)[0] if uri.startswith(SQLITE) else uri if uri.startswith("/") else None
    if path is None or path in ("", ":memory:"):
        return  # a server, Databricks, an in-memory store: MLflow's own errors say what is wrong
    fix = "check MLFLOW_TRACKING_URI / MLFLOW_REGISTRY_URI"
    if not os.path.exists(path):
        raise WeightsError(f"MLflow's store {uri}: no such {'file' if uri.startswith(SQLITE) else 'folder'} (the job "
                           f"never creates a store); {fix}")
    if not uri.startswith(SQLITE):
        return
    if os.path.isdir(path):
        raise WeightsError(f"MLflow's store {uri}: a folder, not a sqlite database file; name the database in it "
                           f"({SQLITE}{os.path.join(path, 'mlflow.db')}), or {fix}")
    with open(path, "rb") as f:
        if f.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
            raise WeightsError(f"MLflow's store {uri}: not a sqlite database ({os.path.getsize(path)} bytes); {fix}")
