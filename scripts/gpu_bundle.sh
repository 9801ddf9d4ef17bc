#!/usr/bin/env bash
# For a GPU machine that cannot reach a package index (as the lent machines this project measures on):
# build, here, a small offline-installable bundle of the Python packages such a machine lacks for the
# project's jobs. On a GPU machine that reaches an index, skip this: `pip install -e ".[ray,gpu,test]"`.
# The lent machines' image already has Python 3.12, torch, torchvision, numpy, pandas, pyarrow, pillow,
# matplotlib, pytest and psutil, so only Ray, boto3/botocore and their small pure-Python needs go in. Ray's
# Java jars, dashboard client and RL/serve/tune/train/llm libraries are dropped.
# With GPU_BUNDLE_NVIMGCODEC=1 it adds nvImageCodec (CUDA 13) + libnvjpeg for the H100's hardware JPEG
# decoder, keeping only the Python 3.12 binding and the JPEG extensions. About 45 MB (53 MB with nvImageCodec).
#
# Usage, from the project root:  bash scripts/gpu_bundle.sh          (extra packages: GPU_BUNDLE_EXTRA="pkg==v ...")
# Writes .gpu-bundle/site.tar.xz (ignored by git); scripts/gpu_session.sh unpacks it on the GPU machine:
#   mkdir -p /tmp/site && tar xJf .gpu-bundle/site.tar.xz -C /tmp/site && export PYTHONPATH=/tmp/site:$PWD
#   (with nvImageCodec also: export LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH)
set -euo pipefail
PYV=3.12; OUT=.gpu-bundle; W=$(mktemp -d)
# simplejpeg: the CPU stage's JPEG fast path (libjpeg-turbo direct; 0.4 MB). The image already has opencv-python-headless.
PKGS="ray==2.60.0 jsonschema referencing jsonschema-specifications rpds-py boto3 botocore s3transfer jmespath simplejpeg ${GPU_BUNDLE_EXTRA:-}"
[ "${GPU_BUNDLE_NVIMGCODEC:-0}" = 1 ] && PKGS="$PKGS nvidia-nvimgcodec-cu13 nvidia-nvjpeg"
mkdir -p "$OUT"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PYV" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$W/whl" $PKGS
mkdir -p "$W/site"
for w in "$W"/whl/*.whl; do unzip -q -o "$w" -d "$W/site"; done  # unzip keeps the run bits of raylet and gcs_server
rm -rf "$W"/site/ray/{jars,dashboard/client,rllib,serve,tune,train,llm}
if [ -d "$W/site/nvidia/nvimgcodec" ]; then
  find "$W/site/nvidia/nvimgcodec" -name 'nvimgcodec_impl.cpython-*' ! -name '*cpython-312-*' -delete
  rm -f "$W"/site/nvidia/nvimgcodec/extensions/lib{opencv,tiff,nvtiff,nvjpeg2k}_ext.so*
fi
tar -C "$W/site" -cf - . | xz -T0 -6 > "$OUT/site.tar.xz"
rm -rf "$W"; ls -la "$OUT/site.tar.xz"
