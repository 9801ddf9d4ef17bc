"""Build model.tar.gz as the SageMaker PyTorch container expects it, and upload it.

Layout (the container unpacks it into /opt/ml/model)::

    model.pth            {"state_dict", "class_names", "recipe"}: the weights the driver described,
                         with their names and recipe (a torchvision or timm model; absent for --weights random)
    model/               a Hugging Face folder's files, or an MLflow model's, as the driver read them
    serving.json         the job options the handler needs (image column, ...) and the run's plan,
                         whose model (architecture, names, recipe) names model.pth and its sha256
    code/handler.py      runners/sagemaker/serving/handler.py: model_fn ... output_fn
    code/job/ code/preprocess/ code/inference/ code/storage/ code/runners/...
                         the modules of ours the handler imports, and theirs, and so on
                         (``runners.sagemaker.imports``): no list to fall behind the code
    code/requirements.txt, code/wheels/   for AWS only: what the image lacks (pyarrow, simplejpeg), as
                         wheels for its Python, installed at start-up with no index

Several models (``--models``): each model's ``model.pth`` and ``model/`` lie under ``models/<n>/`` (``n``: its index
in the run), as one model's lie at the top, so two models' files never collide; ``serving.json``'s ``models`` lists
each one's plan, its folder and the run's input files it scores, in place of the one ``execution``.

Use ``build_model_tar`` once per job, before the transform; ``upload`` puts it on S3. The
model's container variables (``container.environment()``) name ``code/handler.py``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import posixpath
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

import torch

from inference import ModelSpec, load_model
from inference.sources import source_of
from inference.weights import OWN_WEIGHTS, RANDOM_WEIGHTS
from job.config import JobConfig
from job.engine import ModelRun
from job.execution import Execution
from runners.sagemaker import wheels as serving_wheels
from runners.sagemaker.container import ENTRY_POINT
from runners.sagemaker.imports import modules_imported_by
from runners.sagemaker.serving import handler
from storage import Location, storage_errors

SERVING_FIELDS = ("image_column", "raw_shape", "topk", "max_pixels")  # the JobConfig fields the handler reads
SEVERAL_FOLDER = "models/{number}"  # several models: the archive folder of the run's ``number``-th model's files


def serving_options(config: JobConfig, execution: Execution) -> dict:
    """What the handler needs to know about the job: its options and its plan (the model, as archived)."""
    return {"config": stage_options(config), "execution": execution.to_dict()}


def stage_options(config: JobConfig) -> dict:
    """The job options the handler's stages read (``SERVING_FIELDS``): the input's, shared by every model of a run."""
    return {name: getattr(config, name) for name in SERVING_FIELDS}


def archive_weights(model: ModelSpec, path: str, s3_endpoint_url: str | None = None) -> ModelSpec:
    """Save the weights ``model`` describes at ``path`` with its names and recipe; returns the spec that reads them.

    One file a reader can use alone (``torch.load`` gives the state dict, the class names and
    the recipe); the returned spec names it relative to the model dir, with its sha256, so the
    container refuses an archive whose weights changed.
    """
    state = load_model(model, s3_endpoint_url=s3_endpoint_url).module.state_dict()  # read once already, by the driver
    names = None if model.class_names is None else list(model.class_names)
    torch.save({"state_dict": state, "class_names": names, "recipe": model.recipe.to_dict()}, path)
    with open(path, "rb") as f:
        sha256 = hashlib.sha256(f.read()).hexdigest()
    return dataclasses.replace(model, weights=handler.WEIGHTS_FILE, weights_sha256=sha256)


def archive_folder(model: ModelSpec, tar: tarfile.TarFile, s3_endpoint_url: str | None = None,
                   under: str = "") -> ModelSpec:
    """Add a folder source's files (an HF folder, an MLflow model) under ``handler.MODEL_FOLDER`` (in the archive's
    folder ``under``); returns the spec that reads them there, relative to ``under`` (the weights' digest unchanged:
    the same bytes). A source whose model is a name and a weights file (torchvision, timm: its ``folder`` gives None)
    is returned as it is."""
    folder = source_of(model.kind).folder(model, s3_endpoint_url)
    if folder is None:
        return model
    for root, _, names in os.walk(folder):
        for name in sorted(names):
            path = os.path.join(root, name)
            tar.add(path, posixpath.join(under, handler.MODEL_FOLDER, os.path.relpath(path, folder)))
    return dataclasses.replace(model, location=handler.MODEL_FOLDER, store=None)


def archive_model(config: JobConfig, execution: Execution, tar: tarfile.TarFile, tmp: str,
                  under: str = "") -> Execution:
    """Add the files of ``execution``'s model (its folder source's files, its weights file) in the archive's folder
    ``under`` ("": the top); returns the plan that reads them there, relative to that folder."""
    model = archive_folder(execution.model, tar, config.s3_endpoint_url, under)
    if model.weights not in (RANDOM_WEIGHTS, OWN_WEIGHTS):  # a weights file: torchvision's or timm's
        weights = os.path.join(tmp, under, handler.WEIGHTS_FILE)
        os.makedirs(os.path.dirname(weights), exist_ok=True)
        model = archive_weights(model, weights, config.s3_endpoint_url)
        tar.add(weights, posixpath.join(under, handler.WEIGHTS_FILE))
    return dataclasses.replace(execution, model=model)


def archive_models(config: JobConfig, models: Sequence[ModelRun], tar: tarfile.TarFile, tmp: str) -> list[dict]:
    """Several models' files, each in its own folder of the archive; serving.json's entry of each."""
    entries = []
    for number, run in enumerate(models):
        folder = SEVERAL_FOLDER.format(number=number)
        execution = archive_model(config, run.execution, tar, tmp, folder)
        files = None if run.files is None else sorted(run.files)
        entries.append({"execution": execution.to_dict(), "folder": folder, "files": files})
    return entries


def build_model_tar(config: JobConfig, execution: Execution, directory: str, wheels: Sequence[Path] = (),
                    models: Sequence[ModelRun] = ()) -> str:
    """Write ``directory/model.tar.gz``; returns its path.

    ``wheels`` (from ``wheels.fetch``) go into ``code/wheels/`` with the requirements.txt that
    installs them offline; without them there is no requirements.txt (``--local`` runs here).
    ``models``: a run's models (``Job.runs``); more than one, and the archive holds every one of them (``execution``
    is then the first's), each under its own folder.
    """
    path = os.path.join(directory, "model.tar.gz")
    with tempfile.TemporaryDirectory(prefix="model-") as tmp, tarfile.open(path, "w:gz") as tar:
        if len(models) > 1:
            serving = {"config": stage_options(config), handler.SEVERAL: archive_models(config, models, tar, tmp)}
        else:
            serving = serving_options(config, archive_model(config, execution, tar, tmp))
        _add_bytes(tar, handler.SERVING_CONFIG, json.dumps(serving, indent=2).encode())
        if wheels:
            _add_bytes(tar, "code/requirements.txt", serving_wheels.requirements_txt(list(wheels)).encode())
            for wheel in wheels:
                tar.add(wheel, f"code/{serving_wheels.WHEELS_DIR}/{Path(wheel).name}")
        tar.add(handler.__file__, f"code/{ENTRY_POINT}")
        for source, name in modules_imported_by(handler.__file__):
            tar.add(source, f"code/{name}")
    return path


def unpack(tar_path: str, model_dir: str) -> str:
    """Unpack model.tar.gz as the container does; returns ``model_dir``."""
    with tarfile.open(tar_path) as tar:
        tar.extractall(model_dir, filter="data")
    return model_dir


def upload(tar_path: str, location: Location) -> str:
    """Copy model.tar.gz to ``location`` (an object path); returns its URI."""
    with storage_errors(location.uri), open(tar_path, "rb") as src, location.filesystem.open_output_stream(location.path) as out:
        while chunk := src.read(8 * 1024 * 1024):
            out.write(chunk)
    return location.uri


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))
