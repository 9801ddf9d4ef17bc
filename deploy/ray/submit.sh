#!/usr/bin/env bash
# Submits one nightly run of the Ray batch inference job to the cluster of cluster.yaml.
# Run from the repository root after `ray up deploy/ray/cluster.yaml`, with the values of
# `terraform -chdir=terraform output job_env` exported:
#   INPUT_URI=... OUTPUT_PREFIX=... WEIGHTS_URI=... deploy/ray/submit.sh
# Nightly from cron: 0 2 * * * cd /path/to/repo && INPUT_URI=... deploy/ray/submit.sh
set -euo pipefail

: "${INPUT_URI:?set INPUT_URI (terraform output job_env)}"
: "${OUTPUT_PREFIX:?set OUTPUT_PREFIX (terraform output job_env)}"
: "${WEIGHTS_URI:?set WEIGHTS_URI (terraform output job_env)}"

# Ray 2.60 clusters started with RAY_AUTH_MODE=token (cluster.yaml) accept only clients
# that send the token: ~/.ray/auth_token here, or RAY_AUTH_TOKEN.
export RAY_AUTH_MODE="${RAY_AUTH_MODE:-token}"
CLUSTER_YAML="deploy/ray/cluster.yaml"

# The dashboard (job API, port 8265) is reached through an SSH tunnel, never opened to the internet.
if [[ -z "${RAY_ADDRESS:-}" ]]; then
  ray dashboard "$CLUSTER_YAML" >/dev/null 2>&1 &
  tunnel_pid=$!
  trap 'kill "$tunnel_pid"' EXIT
  export RAY_ADDRESS="http://127.0.0.1:8265"
  sleep 5
fi

# --num-gpu-actors equals gpu_worker min_workers = max_workers in cluster.yaml.
ray job submit --working-dir . -- \
  python -m runners.ray_job \
  --input "$INPUT_URI" \
  --output "$OUTPUT_PREFIX" \
  --weights "$WEIGHTS_URI" \
  --num-gpu-actors 4 \
  --batch-size 256 \
  --incremental
