#!/usr/bin/env bash
# The Spark tests under the libraries of Databricks Runtime ML LTS releases: for each runtime, a
# virtualenv (.venv-dbr-<version>) with the project installed under that runtime's pins
# (requirements/databricks-<version>-lts-ml.txt: pyspark, pandas, pyarrow, numpy as the cluster
# has them), then the Spark tests in it. Catches what the newest releases in .venv hide: an API
# that is new in pyspark 4, a pandas 2 idiom, a numpy 2 behaviour. Safe to re-run (a venv that
# already matches installs nothing). Needs Java (scripts/setup.sh installs it).
# Usage: bash scripts/spark_runtimes.sh [RUNTIME ...] [-- PYTEST ARGS]   (default: every runtime)
#   bash scripts/spark_runtimes.sh 16.4 -- -x -k series
set -euo pipefail
cd "$(dirname "$0")/.."

RUNTIMES=(17.3 16.4)
SPARK_TESTS=(
  tests/integration/test_spark_session.py
  tests/integration/test_spark_job.py
  tests/integration/test_checks_spark.py
  tests/reliability/test_spark_faults.py
)
# Not a runtime pin: the ML runtimes carry their own torch builds. These are the ones this
# machine's pip takes from its disk; the runtime's numpy must work with them, and does.
TORCH=(torch==2.14.1 torchvision==0.29.1)
PYTHON=${PYTHON:-python3}  # the runtimes run Python 3.12; any Python both pin sets have wheels for

selected=()
while (($#)) && [[ $1 != -- ]]; do selected+=("$1"); shift; done
(($#)) && shift  # the --
((${#selected[@]})) || selected=("${RUNTIMES[@]}")

command -v java >/dev/null || { echo "Spark needs Java: run bash scripts/setup.sh (or install a JRE 17)" >&2; exit 2; }

setup_runtime() {  # $1: runtime version; pip's output goes to .venv-dbr-$1/pip.log, shown if it fails
  local pins="requirements/databricks-$1-lts-ml.txt" venv=".venv-dbr-$1"
  [[ -f $pins ]] || { echo "no pins for runtime $1: expected $pins (runtimes: ${RUNTIMES[*]})" >&2; return 2; }
  [[ -x $venv/bin/python ]] || "$PYTHON" -m venv "$venv"
  if ! { "$venv/bin/pip" install --upgrade pip && "$venv/bin/pip" install -c "$pins" -e ".[spark,test]" "${TORCH[@]}" \
         && "$venv/bin/pip" check; } >"$venv/pip.log" 2>&1; then
    tail -40 "$venv/pip.log" >&2
    echo "runtime $1: could not install the project under $pins (whole log: $venv/pip.log)" >&2
    return 2
  fi
  # What the tests will run on; and numpy handing arrays to this torch and back, as the model does.
  "$venv/bin/python" -c "import sys, numpy, pandas, pyarrow, pyspark, torch
assert torch.from_numpy(numpy.arange(3.0)).mul(2).numpy().tolist() == [0.0, 2.0, 4.0]
print(f'runtime $1: python {sys.version.split()[0]}, pyspark {pyspark.__version__}, pandas {pandas.__version__}, '
      f'pyarrow {pyarrow.__version__}, numpy {numpy.__version__}, torch {torch.__version__}')"
}

failed=()
for runtime in "${selected[@]}"; do
  start=$SECONDS
  setup_runtime "$runtime"
  echo "runtime $runtime: set up in $((SECONDS - start)) s"
  start=$SECONDS
  PYTHONUNBUFFERED=1 ".venv-dbr-$runtime/bin/python" -m pytest -p no:logging "${SPARK_TESTS[@]}" "$@" \
    || failed+=("$runtime")
  echo "runtime $runtime: tests ran in $((SECONDS - start)) s"
done
((${#failed[@]} == 0)) || { echo "Spark tests failed under Databricks Runtime ${failed[*]}" >&2; exit 1; }
