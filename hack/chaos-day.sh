#!/usr/bin/env bash
# Runs the chaos day (TestChaosDay, in test/e2e/faults) over its regression seeds and SEEDS seeds
# from FIRST, one seed at a time (kube-scheduler keeps process-wide state), the whole log in
# $OUT/chaos-day.log, and prints which seeds failed: replay one with
# CHAOSDAY_SEEDS=N go test -count=1 -run TestChaosDay ./test/e2e/faults/
set -euo pipefail
SEEDS=${SEEDS:-10}
FIRST=${FIRST:-1000}
OUT=${OUT:-$(mktemp -d)}
GO=${GO:-go}
mkdir -p "$OUT"
log="$OUT/chaos-day.log"
status=0
CHAOSDAY_SEEDS=$SEEDS CHAOSDAY_FIRST=$FIRST $GO test -count=1 -timeout 0 -run '^TestChaosDay$' -v ./test/e2e/faults/ >"$log" 2>&1 || status=$?
grep -E 'chaos day seed [0-9]+: [0-9]+ restarts' "$log" || true
passed=$(grep -cE '^    --- PASS: TestChaosDay/seed=' "$log" || true)
failed=$(grep -E '^    --- FAIL: TestChaosDay/seed=' "$log" | sed -E 's/.*seed=([0-9]+).*/\1/' | tr '\n' ' ' || true)
echo "chaos day: $passed seeds passed (the regression seeds and $SEEDS from $FIRST); failing seeds: ${failed:-none}; log in $log"
exit $status
