#!/usr/bin/env bash
# Everything a lent GPU machine should run, in one call: the GPU tests, then the benchmarks
# whose figures go into BENCHMARKS.md, with their JSON rows copied to $OUT.
#
# Here (with network):   GPU_BUNDLE_PACKAGES="$(cat scripts/gpu_bundle_packages.txt)" ../shared/tools/gpu-bundle.sh
# On the GPU machine:    bash scripts/gpu_session.sh           # carry .gpu-bundle; $OUT comes back
#
# The machine's image has Python 3.12, torch, torchvision, numpy, pandas and pyarrow; the bundle
# adds Ray and boto3. Spark and SageMaker are left out there: no Java, and the GPU figures
# that matter are the Ray job and the DataLoader baseline against the model-only ceiling.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT" /tmp/site
tar xJf .gpu-bundle/site.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD RAY_AUTH_MODE=disabled
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
python -m pytest -p no:logging -p no:cacheprovider -q -m gpu tests/gpu 2>&1 | tee "$OUT/gpu-tests.txt" || true

IMAGES=${IMAGES:-8192}
python -m runners.make_dataset --output /tmp/gpu-in --images "$IMAGES" --rows-per-file 512
python -m runners.make_dataset --output /tmp/gpu-in-12mp --images 512 --size 4000x3000 --rows-per-file 64
for decode in cpu gpu; do
  python -m runners.compare --engines ray,local --input /tmp/gpu-in --weights random --decode "$decode" \
    --report "$OUT/compare-$decode" --append-results benchmarks/results/compare.jsonl --note "lent GPU, --decode $decode" || true
done
python -m runners.compare --engines ray --input /tmp/gpu-in --weights random --compile \
  --report "$OUT/compare-compile" --append-results benchmarks/results/compare.jsonl --note "lent GPU, --compile" || true
python -m runners.compare --engines ray --input /tmp/gpu-in-12mp --weights random --decode gpu --stage all \
  --report "$OUT/compare-12mp" --append-results benchmarks/results/compare.jsonl --note "lent GPU, 12 MP JPEGs, --decode gpu" || true
python -m benchmarks.preprocess_bench --images 48 || true
cp benchmarks/results/*.jsonl "$OUT/"
