#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the whole test suite: unit, integration (local Ray, local
# Spark, moto's S3 server on 127.0.0.1) and deployment checks. GPU tests skip without CUDA.
# Usage: bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PYTHONUNBUFFERED=1
exec .venv/bin/python -m pytest -p no:logging "$@"
