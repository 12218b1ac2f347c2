#!/usr/bin/env bash
# Runs the workload harness over SEEDS seeds from FIRST (default 1000), split over JOBS processes.
# kube-scheduler keeps process-wide state, so one process runs one seed at a time; the seeds
# spend most of their time waiting for the cluster to settle, so a few processes per core pay.
# Each process logs to $OUT/job-N.log; failing seeds write their manifests under $OUT.
set -euo pipefail
SEEDS=${SEEDS:-100}
FIRST=${FIRST:-1000}
JOBS=${JOBS:-1}
OUT=${OUT:-$(mktemp -d)}
GO=${GO:-go}
mkdir -p "$OUT"
bin="$OUT/harness.test"
$GO test -c -o "$bin" ./test/harness/
per=$(( (SEEDS + JOBS - 1) / JOBS ))
pids=()
for ((j = 0; j < JOBS; j++)); do
	from=$(( FIRST + j * per ))
	n=$(( per < SEEDS - j * per ? per : SEEDS - j * per ))
	(( n > 0 )) || break
	# The test binary runs in its package folder, as `go test` would.
	(cd test/harness && HARNESS_OUT="$OUT" HARNESS_SEEDS=$n HARNESS_FIRST_SEED=$from \
		"$bin" -test.run TestWorkloadHarness -test.v -test.count 1 -test.timeout 0 >"$OUT/job-$j.log" 2>&1) &
	pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
passed=$(cat "$OUT"/job-*.log | grep -cE '^    --- PASS: TestWorkloadHarness/seed=' || true)
failed=$(cat "$OUT"/job-*.log | grep -E '^    --- FAIL: TestWorkloadHarness/seed=' | sed -E 's/.*seed=([0-9]+).*/\1/' | tr '\n' ' ' || true)
echo "harness: $passed of $SEEDS seeds from $FIRST passed; failing seeds: ${failed:-none}; logs in $OUT"
exit $status
