#!/usr/bin/env bash
# Run the test suite (scripts/test.sh) several times in a row on a busy machine: two busy loops and a 10 GiB
# allocation beside it, as on a developer's laptop with other work open. Each run's exit status and minutes are printed;
# the first failing run stops it.
# Usage: bash scripts/test_under_load.sh [pytest args]   (RUNS=2 BUSY_LOOPS=2 HOLD_GIB=10 by default)
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-2} loops=${BUSY_LOOPS:-2} hold=${HOLD_GIB:-10}
bash scripts/setup.sh || exit 1
load=()
trap 'kill "${load[@]}" 2>/dev/null' EXIT
for _ in $(seq "$loops"); do (while :; do :; done) & load+=($!); done
# np.ones writes every byte, so the memory is resident, not merely reserved.
.venv/bin/python -c "import sys, time, numpy as np; held = np.ones(int(sys.argv[1]) << 30, np.uint8); time.sleep(10**6)" "$hold" &
load+=($!)
sleep 10  # the allocation written before the first test starts
echo "load: $loops busy loops, $hold GiB held; $(free -g | awk '/Mem:/ {print $3 " of " $2 " GiB used"}')"
for run in $(seq "$runs"); do
    started=$(date +%s)
    bash scripts/test.sh "$@"
    status=$?
    echo "run $run of $runs: exit $status in $(( ($(date +%s) - started) / 60 )) min $(( ($(date +%s) - started) % 60 )) s"
    [ "$status" -eq 0 ] || exit "$status"
done
