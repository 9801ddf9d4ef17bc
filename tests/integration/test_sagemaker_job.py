"""python -m runners.sagemaker_job end to end: --local on a real S3 server, and the AWS path's
API calls against moto (which accepts a transform job and marks it Completed without running it)."""

from __future__ import annotations

import io
import json

import boto3
import numpy as np
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from inference import Predictions
from runners import sagemaker_job
from job import progress
from job.cli import run_main
from job.config import JobConfig
from job.input.plan import read_file
from job.prepare import plan_input
from job.output.rows import prediction_table
from job.stages import Classify, Preprocess
from runners.sagemaker import aws, container
from storage import resolve
from tests.common.contract import assert_output_contract, assert_progress_shown, read_output
from tests.common.datasets import write_mixed
from tests.common.sagemaker import image_wheelhouse
from tests.common.plans import cpu_execution

ROLE = "arn:aws:iam::123456789012:role/batch-inference"


def test_local_meets_the_output_contract_and_matches_the_shared_stages(s3_bucket, s3_env, monkeypatch, capsys):
    monkeypatch.setattr(progress, "LOG_EVERY_SECONDS", 0.2)  # the display's log lines, at test speed
    ids, bad = write_mixed(f"s3://{s3_bucket}/images/", s3_env)
    manifest = sagemaker_job.main(["--local", "--weights", "random", "--input", f"s3://{s3_bucket}/images/",
                                   "--output", f"s3://{s3_bucket}/preds/", "--s3-endpoint-url", s3_env,
                                   "--max-concurrent-transforms", "2"])
    rows, written = read_output(f"s3://{s3_bucket}/preds/", s3_env)
    assert written == manifest and manifest["engine"] == "sagemaker" and manifest["settings"]["sagemaker"]["failed_shards"] == []
    assert_output_contract(rows, manifest, ids, bad)
    # The timeline comes from each shard's .out, not from the parts committed after the transform.
    assert manifest["timeline"]["events"] == manifest["settings"]["sagemaker"]["shards"] and manifest["timeline"]["startup_seconds"]
    assert_progress_shown(capsys.readouterr().err, "sagemaker", len(ids))  # each shard's response
    # Parity with Ray: Ray's test holds its output equal to these stages called directly.
    config = JobConfig(input=f"s3://{s3_bucket}/images/", output=None, weights="random", s3_endpoint_url=s3_env, decode="cpu")
    plan = plan_input(resolve(config.input, s3_env), config)
    preprocess, classify, by_id = Preprocess(config, cpu_execution(config)), Classify(config, cpu_execution(config)), {r["id"]: r for r in rows}
    for file in plan.files:
        for batch_ids, batch in read_file(plan, file, batch_rows=64):
            for row in classify(preprocess(batch_ids, batch)).to_pylist():
                assert by_id[row["id"]]["topk_labels"] == row["topk_labels"]
                if row["topk_scores"]:
                    np.testing.assert_allclose(by_id[row["id"]]["topk_scores"], row["topk_scores"], atol=1e-4)


def test_bad_option_is_one_line_before_any_work(capsys):
    assert run_main(sagemaker_job.main, ["--local", "--max-payload-mb", "50", "--max-concurrent-transforms", "3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "3 x --max-payload-mb 50 = 150 exceeds SageMaker's limit of 100" in err


def _place_out_objects(s3_env: str, skip: int):
    """Stand in for the service: write a fake .out for every shard but the ``skip``-th."""
    real_wait = aws.wait

    def wait(client, name, timeout_s, **kwargs):
        job = client.describe_transform_job(TransformJobName=name)
        shards = resolve(job["TransformInput"]["DataSource"]["S3DataSource"]["S3Uri"], s3_env)
        outputs = resolve(job["TransformOutput"]["S3OutputPath"], s3_env)
        names = sorted(i.path.rsplit("/", 1)[1] for i in shards.filesystem.get_file_info(pafs.FileSelector(shards.path)))
        for index, name_ in enumerate(names):
            if index == skip:
                continue
            with shards.filesystem.open_input_file(shards.join(name_)) as f:
                ids = pq.read_table(io.BytesIO(f.read())).column("id").to_pylist()
            n = len(ids)
            fake = Predictions(np.full(n, 7), np.full(n, 0.5, np.float32), np.full((n, 1), 7), np.full((n, 1), 0.5, np.float32))
            plan = cpu_execution(JobConfig(input=None, output=None, weights="random"))  # the job's output columns
            with outputs.filesystem.open_output_stream(outputs.join(name_ + ".out")) as out:
                pq.write_table(prediction_table(ids, [None] * n, fake, plan), out)
        return real_wait(client, name, timeout_s, poll_s=0, **kwargs)

    return wait


def _record_requests(monkeypatch) -> dict[str, list[dict]]:
    """The API requests the runner's SDK session sends, as botocore validated and serialized
    them (moto does not keep every field, e.g. EnableNetworkIsolation)."""
    sent: dict[str, list[dict]] = {}
    real_session = aws.sagemaker_session

    def record(model, params, **_):
        sent.setdefault(model.name, []).append(json.loads(params["body"]))

    def session_with_recorder(region):
        session = real_session(region)
        session.sagemaker_client.meta.events.register("before-call.sagemaker", record)
        return session

    monkeypatch.setattr(aws, "sagemaker_session", session_with_recorder)
    return sent


def test_aws_path_requests_and_assembly(s3_bucket, s3_env, monkeypatch, tmp_path):
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER", s3_env)  # moto's server speaks every service
    monkeypatch.setattr(aws, "wait", _place_out_objects(s3_env, skip=1))
    sent = _record_requests(monkeypatch)
    ids, _ = write_mixed(f"s3://{s3_bucket}/images/", s3_env)
    manifest = sagemaker_job.main([
        "--weights", "random", "--input", f"s3://{s3_bucket}/images/", "--output", f"s3://{s3_bucket}/preds/",
        "--s3-endpoint-url", s3_env, "--role", ROLE, "--region", "us-east-1", "--max-payload-mb", "4",
        "--max-concurrent-transforms", "2", "--instance-type", "ml.g5.2xlarge",
        "--wheelhouse", str(image_wheelhouse(tmp_path / "wheels")),
    ])
    client = boto3.client("sagemaker", region_name="us-east-1", endpoint_url=s3_env)
    job = client.describe_transform_job(TransformJobName=client.list_transform_jobs()["TransformJobSummaries"][0]["TransformJobName"])
    assert job["TransformJobStatus"] == "Completed" and job["MaxPayloadInMB"] == 4 and job["MaxConcurrentTransforms"] == 2
    assert job["TransformResources"] == {"InstanceType": "ml.g5.2xlarge", "InstanceCount": 1}
    assert job["TransformInput"]["ContentType"] == "application/x-parquet" and job["TransformInput"]["SplitType"] == "None"
    staging = f"s3://{s3_bucket}/preds/_staging/sagemaker-{manifest['run_id']}/"
    assert job["TransformInput"]["DataSource"]["S3DataSource"]["S3Uri"] == staging + "input/"
    assert job["TransformOutput"]["S3OutputPath"] == staging + "output/"
    assert set(sent) == set(aws.API_OPERATIONS), "terraform's sagemaker_runner policy grants exactly these"
    [model] = sent["CreateModel"]
    assert model["ModelName"] == job["ModelName"] and model["EnableNetworkIsolation"] is True
    assert model["PrimaryContainer"]["Image"] == "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-inference:2.6.0-gpu-py312"
    environment = model["PrimaryContainer"]["Environment"]
    assert environment == {**container.environment(4), "SAGEMAKER_REGION": "us-east-1"}
    assert environment["TS_MAX_REQUEST_SIZE"] == str(4 * 1024 * 1024), "TorchServe accepts every shard the job sends"
    assert model["PrimaryContainer"]["ModelDataUrl"] == staging + "model.tar.gz" and model["ExecutionRoleArn"] == ROLE
    assert sent["DeleteModel"] == [{"ModelName": job["ModelName"]}]
    assert client.list_models()["Models"] == [], "the per-run model is deleted after the job"
    rows, _ = read_output(f"s3://{s3_bucket}/preds/", s3_env)
    assert sorted(r["id"] for r in rows) == sorted(ids)  # nothing lost: the shard without .out is error rows
    missing = [r for r in rows if r["error"]]
    assert missing and all("no .out object for shard shard-00001-0000.parquet" in r["error"] for r in missing)
    assert all(r["label"] == 7 for r in rows if not r["error"]) and manifest["settings"]["sagemaker"]["failed_shards"] == ["shard-00001-0000.parquet"]
