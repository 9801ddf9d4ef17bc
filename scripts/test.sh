#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the whole test suite: unit, integration (local Ray, local
# Spark, moto's S3 server on 127.0.0.1) and deployment checks. GPU tests skip without CUDA.
# Usage: bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PYTHONUNBUFFERED=1
# Two test processes (pytest-xdist), each taking whole test files: much of a test's time is spent waiting on a
# JVM, a Ray or a subprocess, which the other process fills; a file's module-scoped Ray or Spark stays shared by
# its tests, and the four-engine run is made once for both workers (tests/integration/conftest.py).
exec .venv/bin/python -m pytest -p no:logging -n 2 --dist loadfile "$@"
