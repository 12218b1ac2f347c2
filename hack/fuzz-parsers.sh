#!/usr/bin/env bash
# Runs every Go fuzz target (func FuzzXxx(f *testing.F)) under pkg/ for FUZZTIME each, one after
# another: `go test -fuzz` takes one target of one package at a time. Targets are found by name,
# so a new one is run without editing this file. A failure leaves its input in the package's
# testdata/fuzz/FuzzXxx/, where the unit tests replay it from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}
# FUZZ_PACKAGES limits the run to some folders (space-separated, e.g. "pkg/aws/userdata"); empty
# means every package under pkg/.
FUZZ_PACKAGES=${FUZZ_PACKAGES:-pkg}
failed=()
# shellcheck disable=SC2086 # FUZZ_PACKAGES is a list of folders
targets=$(grep -rl --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' $FUZZ_PACKAGES | sort -u)
for file in $targets; do
	pkg=./$(dirname "$file")
	# FUZZ_LIGHT=1 (make fuzz-short): a target whose package or tests import client-go would make
	# make test build it instrumented; refuse it before building anything.
	if [[ ${FUZZ_LIGHT:-} == 1 ]]; then
		deps=$($GO list -deps -test "$pkg")
		if grep -q '^k8s.io/client-go/' <<<"$deps"; then
			echo "fuzz-short: $pkg or its tests import client-go (go list -deps -test $pkg), which makes its instrumented fuzz build heavy" >&2
			exit 1
		fi
	fi
	for name in $(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$file" | cut -d' ' -f2); do
		echo "== $pkg $name ($FUZZTIME)"
		if ! $GO test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg"; then
			failed+=("$pkg $name")
		fi
	done
done
if ((${#failed[@]})); then
	printf 'fuzz target failed: %s\n' "${failed[@]}"
	exit 1
fi
