#!/usr/bin/env bash
# Set up a development environment from nothing: .venv with the project and every engine,
# the deployment checkers, and checkov in its own .venv-checkov (it pins packaging<24, which
# ray 2.60 cannot share). Safe to re-run. Usage: bash scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v java >/dev/null 2>&1; then  # Spark's JVM
  apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless
fi
if ! command -v rsync >/dev/null 2>&1; then  # tests/deploy: what `ray up` uploads, as Ray's rsync call would
  apt-get update -qq && apt-get install -y -qq rsync
fi
# The environments take about 9 GB (torch's CUDA wheels alone 4 GB), and pip's downloads more while it runs; on a
# full disk pip ends in a misleading hash mismatch, so say it first.
free_gb=$(df -Pk . | awk 'NR == 2 {print int($4 / 1048576)}')
if [ ! -x .venv/bin/python ] && [ "$free_gb" -lt 12 ]; then
  echo "setup: $free_gb GB free on $(df -P . | awk 'NR == 2 {print $6}'), the environments need about 12 GB: free some and re-run" >&2
  exit 1
fi
# The two environments install side by side: each pip spends much of its time waiting on downloads and disk.
(python3 -m venv .venv-checkov && .venv-checkov/bin/pip install -q -r tests/deploy/requirements-checkov.txt) &
checkov=$!
python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -e ".[dev]" -r requirements/deploy.txt
wait "$checkov"
