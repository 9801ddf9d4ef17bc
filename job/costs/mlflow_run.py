"""A night logged as an MLflow run: its options and model as params, its figures as metrics, its manifest as an artifact.

Use ``log_night`` (``runners.history --mlflow-experiment NAME``) where a team keeps its jobs' runs in MLflow. The run is
tagged with the night's run id (``TAG``), so a night logged once is found, not logged again. The tracking URI is
MLflow's own (``MLFLOW_TRACKING_URI``, ``mlflow.set_tracking_uri``), or the one given. MLflow comes with the [mlflow]
extra; imported only here, only when asked.
"""

from __future__ import annotations

from collections.abc import Mapping

from job.costs.history import Night
from job.errors import JobError

TAG = "sbi.run_id"  # the night's run id (its _history/ record's name)
PARAM_CHARS = 500  # MLflow keeps longer values since 2.x, but a parameter is for reading


def log_night(night: Night, manifest: Mapping, experiment: str, tracking_uri: str | None = None) -> tuple[str, bool]:
    """(the MLflow run's id, whether it was logged now: False when the night was logged before)."""
    try:
        import mlflow
    except ImportError as e:
        raise JobError("--mlflow-experiment needs MLflow: pip install -e '.[mlflow]'") from e
    if not night.finished:
        raise JobError(f"{night.run_id} stopped before its manifest (its parts adopted by {night.adopted_by}): it has "
                       "no figures to log; name a finished night")
    if tracking_uri:
        mlflow.set_tracking_uri(tracking_uri)
    mlflow.set_experiment(experiment)
    logged = mlflow.search_runs(experiment_names=[experiment], filter_string=f"tags.`{TAG}` = '{night.run_id}'",
                                output_format="list")
    if logged:
        return logged[0].info.run_id, False
    with mlflow.start_run(run_name=f"{night.engine} night {night.run_id}", tags={TAG: night.run_id}) as run:
        mlflow.log_params(params(manifest))
        mlflow.log_metrics(metrics(night))
        mlflow.log_dict(dict(manifest), "manifest.json")
    return run.info.run_id, True


def params(manifest: Mapping) -> dict[str, str]:
    """The options and model that made the night's rows, and how it computed, flattened (``recipe.crop``...)."""
    execution = manifest.get("execution") or {}
    chosen = {"engine": manifest.get("engine"), "input": manifest.get("input"), "output": manifest.get("output"),
              **{k: execution.get(k) for k in ("device", "device_name", "batch_size", "precision", "compile", "decode")},
              **(manifest.get("output_options") or {})}
    return {key: str(value)[:PARAM_CHARS] for key, value in _flat(chosen).items() if value is not None}


def metrics(night: Night) -> dict[str, float]:
    """The night's figures, those it has (a figure the manifest lacks is left out, never 0)."""
    figures = {"images_scored": night.scored, "rows": night.rows, "errored": night.errored, "seconds": night.seconds,
               "wall_seconds": night.wall_seconds, "images_per_sec": night.images_per_sec,
               "steady_images_per_sec": night.steady_images_per_sec, "startup_seconds": night.startup_seconds,
               "device_busy_fraction": night.device_busy_fraction, "gpus": night.gpus,
               **{f"scored_{reason.replace(' ', '_')}": count for reason, count in night.by_reason.items()}}
    if night.rollout:
        figures["rollout_files_left"] = night.rollout["left"]["files"]
        figures["rollout_images_left"] = night.rollout["left"]["images"]
    return {key: float(value) for key, value in figures.items() if value is not None}


def _flat(values: Mapping, prefix: str = "") -> dict[str, object]:
    flat: dict[str, object] = {}
    for key, value in values.items():
        if isinstance(value, Mapping):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
