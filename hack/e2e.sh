#!/usr/bin/env bash
# Runs every test that starts a control plane: the e2e tests of test/e2e one process each, JOBS
# of them side by side (each test waits on a cluster far more than it computes, and a process of
# its own keeps process-wide state, such as metrics and kube-scheduler's registrations, its own),
# beside `go test` of the other such packages (the harness's fixed seeds, the CLI, the chart).
# Each test's output goes to OUT/<test>.log; what failed is printed last.
set -uo pipefail
GO=${GO:-go}
JOBS=${JOBS:-2}
TIMEOUT=${TIMEOUT:-15m}
OUT=${OUT:-$(mktemp -d)}
RUN=${RUN:-.}
mkdir -p "$OUT"
rm -f "$OUT"/*.log "$OUT"/*.status
bin="$OUT/e2e.test"
if ! $GO test -c -o "$bin" ./test/e2e/; then
	exit 1
fi
# Longest first, so that no long test starts last; the rest in the order they are listed.
mapfile -t tests < <(cd test/e2e && "$bin" -test.list "$RUN" | grep '^Test' |
	awk '{ print ($0 ~ /^(TestKarpenterShapes|TestChaosDay|TestEC2ThrottlingBacksOff|TestCapacityReservations|TestRequirementsChangeRollsNodesOneAtATime)$/ ? 0 : 1), $0 }' |
	sort -s -k1,1n | cut -d' ' -f2)

$GO test -count=1 -timeout "$TIMEOUT" ./test/harness/ ./cmd/tailor/ ./charts/ >"$OUT/packages.log" 2>&1 &
packages=$!

start=$SECONDS
printf '%s\n' "${tests[@]}" | xargs -P "$JOBS" -I{} bash -c '
	t0=$SECONDS
	(cd test/e2e && "$1" -test.run "^$2\$" -test.count 1 -test.timeout "$3" -test.v) >"$4/$2.log" 2>&1
	rc=$?
	echo "$rc" >"$4/$2.status"
	if [ "$rc" -eq 0 ]; then echo "ok   $2 ($((SECONDS - t0))s)"; else echo "FAIL $2 ($((SECONDS - t0))s)"; fi
' _ "$bin" {} "$TIMEOUT" "$OUT"
echo "e2e: ${#tests[@]} tests in $((SECONDS - start))s with $JOBS side by side"

wait "$packages"
pstatus=$?
grep -E '^(ok|FAIL|---)' "$OUT/packages.log"

failed=()
for t in "${tests[@]}"; do
	[ "$(cat "$OUT/$t.status" 2>/dev/null)" = 0 ] || failed+=("$t")
done
if [ "${#failed[@]}" -eq 0 ] && [ "$pstatus" -eq 0 ]; then
	exit 0
fi
echo "== what failed (whole logs in $OUT):"
if [ "$pstatus" -ne 0 ]; then
	grep -E -e '^panic:|^\s+[a-z_]+_test\.go:[0-9]+: |--- FAIL|^FAIL' "$OUT/packages.log" | tail -40
fi
for t in "${failed[@]}"; do
	echo "-- $t"
	grep -E -e '^panic:|^\s+[a-z_]+_test\.go:[0-9]+: |--- FAIL' "$OUT/$t.log" | tail -25
done
echo "failed: ${failed[*]}"
exit 1
