#!/usr/bin/env bash
# Runs every test that starts a control plane: the e2e tests of the suites under test/e2e one
# process each, JOBS of them side by side (each test waits on a cluster as much as it computes,
# and a process of its own keeps process-wide state, such as metrics and kube-scheduler's
# registrations, its own), beside `go test` of the other such packages (the harness's fixed seeds,
# the CLI, the chart). Each suite package is one test binary; each test runs in its suite's
# directory, where its testdata is. Each test's output goes to OUT/<test>.log (test names are
# unique across the suites); what failed is printed last. SUITES (say "faults aws") runs only those
# suites; PACKAGES= (empty) leaves the other packages out.
set -uo pipefail
GO=${GO:-go}
JOBS=${JOBS:-4}
TIMEOUT=${TIMEOUT:-15m}
OUT=${OUT:-$(mktemp -d)}
RUN=${RUN:-.}
SUITES=${SUITES:-}
PACKAGES=${PACKAGES-./test/harness/ ./cmd/tailor/ ./charts/}
suites=(./test/e2e/...)
if [ -n "$SUITES" ]; then
	suites=()
	for s in $SUITES; do
		if [ ! -f "test/e2e/$s/doc.go" ]; then
			echo "e2e: no suite $s under test/e2e (the suites: $(cd test/e2e && ls -d */ | grep -v env/ | tr -d / | tr '\n' ' '))" >&2
			exit 2
		fi
		suites+=("./test/e2e/$s/")
	done
fi
bin="$OUT/bin"
mkdir -p "$OUT" "$bin"
rm -f "$OUT"/*.log "$OUT"/*.status
# One build for every suite: with a directory, go test -c writes <suite>.test for each package
# that has tests (test/e2e/env has none), linking them side by side.
# -ldflags=-w leaves out DWARF, which no test reads (stack traces keep their files and lines):
# linking the seven binaries takes about 60 s instead of 100 on two cores.
# BUILT=1 runs the binaries a build of every suite left in OUT/bin (make test links them while
# the unit tests run; BUILD_ONLY=1 is that build).
if [ "${BUILT:-0}" != 1 ]; then
	rm -f "$bin"/*.test
	if ! $GO test -c -ldflags=-w -o "$bin/" "${suites[@]}"; then
		exit 1
	fi
fi
if [ "${BUILD_ONLY:-0}" = 1 ]; then
	exit 0
fi
# The step is bound by two cores, and a tenth to a fifth of each test process's CPU went to the
# garbage collector at its default pace (the API server, etcd and the controllers churn through
# decoded objects). The tests here let the heap grow to five times what is live before a
# collection instead of twice, and collect harder only past 2 GiB: about 0.6-1.2 GB more resident
# per process, four to seven at a time, for less CPU. The link above is left at Go's defaults;
# `go test` of the other packages below links under these too. Set either variable to choose
# otherwise.
export GOGC="${GOGC:-400}" GOMEMLIMIT="${GOMEMLIMIT:-2GiB}"
if ! compgen -G "$bin/*.test" >/dev/null; then
	echo "e2e: no test binaries in $bin (BUILT=1 runs what a build left there)" >&2
	exit 1
fi
# "suite test" lines; longest first, so that no long test starts last; the rest in the order
# they are listed.
mapfile -t tests < <(for b in "$bin"/*.test; do
	suite=$(basename "$b" .test)
	(cd "test/e2e/$suite" && "$b" -test.list "$RUN") | grep '^Test' | sed "s/^/$suite /"
done | awk '{ print ($2 ~ /^(TestKarpenterShapes|TestChaosDay|TestEC2ThrottlingBacksOff|TestCapacityReservations|TestRequirementsChangeRollsNodesOneAtATime)$/ ? 0 : 1), $0 }' |
	sort -s -k1,1n | cut -d' ' -f2-)
if [ "${#tests[@]}" -eq 0 ]; then
	echo "e2e: no test matches $RUN"
fi

packages=
if [ -n "$PACKAGES" ]; then
	# shellcheck disable=SC2086 # PACKAGES is a list of package patterns
	# As make unit links: no DWARF, and no vet (make test runs go vet over every package first).
	$GO test -count=1 -vet=off -ldflags=-w -timeout "$TIMEOUT" $PACKAGES >"$OUT/packages.log" 2>&1 &
	packages=$!
fi

start=$SECONDS
printf '%s\n' "${tests[@]}" | xargs -r -P "$JOBS" -L 1 bash -c '
	t0=$SECONDS
	(cd "test/e2e/$4" && "$1/$4.test" -test.run "^$5\$" -test.count 1 -test.timeout "$2" -test.v) >"$3/$5.log" 2>&1
	rc=$?
	echo "$rc" >"$3/$5.status"
	if [ "$rc" -eq 0 ]; then echo "ok   $5 ($4, $((SECONDS - t0))s)"; else echo "FAIL $5 ($4, $((SECONDS - t0))s)"; fi
' _ "$bin" "$TIMEOUT" "$OUT"
echo "e2e: ${#tests[@]} tests in $((SECONDS - start))s with $JOBS side by side"

pstatus=0
if [ -n "$packages" ]; then
	wait "$packages"
	pstatus=$?
	grep -E '^(ok|FAIL|---)' "$OUT/packages.log"
fi

failed=()
for line in "${tests[@]}"; do
	t=${line#* }
	[ "$(cat "$OUT/$t.status" 2>/dev/null)" = 0 ] || failed+=("$line")
done
if [ "${#failed[@]}" -eq 0 ] && [ "$pstatus" -eq 0 ]; then
	exit 0
fi
# A test's own lines, and test/e2e/env's (a helper's failure names its file), without the
# components' klog lines that the test's logger prefixes the same way.
notklog() { grep -v -E '\.go:[0-9]+: [IWEF][0-9]{4} '; }
echo "== what failed (whole logs in $OUT):"
if [ "$pstatus" -ne 0 ]; then
	grep -E -e '^panic:|^\s+[a-z_]+\.go:[0-9]+: |--- FAIL|^FAIL' "$OUT/packages.log" | notklog | tail -40
fi
names=()
for line in "${failed[@]}"; do
	t=${line#* }
	names+=("$t")
	echo "-- $t (test/e2e/${line%% *})"
	grep -E -e '^panic:|^\s+[a-z_]+\.go:[0-9]+: |--- FAIL' "$OUT/$t.log" | notklog | tail -25
done
echo "failed: ${names[*]}"
exit 1
