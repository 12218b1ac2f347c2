#!/usr/bin/env bash
# Prints where a sandbox process spent its CPU, from a CPU profile of it: the share of the
# samples whose stack passes through each part (API server, etcd, kwok, kube-scheduler, Tailor,
# the workload controllers, the garbage collector). The sandbox runs them all in one process, so
# a profile is the only place their costs can be told apart. A sample can count in two parts
# (Tailor's plugin runs inside kube-scheduler), so the shares need not add up to 100.
#
#   hack/cpushare.sh BINARY PROFILE
#
# For the fleet benchmark: `go test -c -o /tmp/prov.test ./test/e2e/provisioning/`, then in
# test/e2e/provisioning `TAILOR_SCALE_PODS=4000 TAILOR_SCALE_UP_ONLY=1 /tmp/prov.test -test.run '^$'
# -test.bench '^BenchmarkFleetScale$' -test.benchtime 1x -test.cpuprofile /tmp/fleet.cpu`.
set -euo pipefail
GO=${GO:-go}
bin=$1
profile=$2
share() { # name regexp
	local line
	line=$($GO tool pprof -top -nodecount=1000000 -focus="$2" "$bin" "$profile" 2>/dev/null | grep -m1 'Showing nodes accounting for' || true)
	printf '%-52s %s\n' "$1" "${line#*accounting for }"
}
$GO tool pprof -top -nodecount=1 "$bin" "$profile" 2>/dev/null | grep -m1 'Total samples'
share 'API server (all of it)' 'k8s.io/apiserver/|k8s.io/kube-aggregator/|k8s.io/apiextensions-apiserver/'
share '  API server: request handlers' 'finisher.finishRequest|k8s.io/apiserver/pkg/server/filters|k8s.io/apiserver/pkg/endpoints'
share '  API server: watch cache and watches' 'k8s.io/apiserver/pkg/storage/cacher.\(\*Cacher\)|cacher.\(\*cacheWatcher\)|k8s.io/apiserver/pkg/storage/cacher.\(\*watchCache\)'
share '  API server: custom resources' 'k8s.io/apiextensions-apiserver'
share '  API server: managed fields' 'k8s.io/apimachinery/pkg/util/managedfields'
share 'etcd' 'go.etcd.io/'
share 'TLS (both ends)' 'crypto/tls'
share 'kwok (the kubelets)' 'sigs.k8s.io/kwok'
share 'workload controllers (ReplicaSet, PDB, ...)' 'k8s.io/kubernetes/pkg/controller/'
share 'kube-scheduler' 'k8s.io/kubernetes/pkg/scheduler'
share 'Tailor' 'github.com/tailor-sh/tailor/pkg/(provision|disruption|lifecycle|plugins|operator|nodepool|controller|scheduling|simulation|cloud)'
share '  Tailor: provisioner' 'github.com/tailor-sh/tailor/pkg/provision'
share '  Tailor: disruption' 'github.com/tailor-sh/tailor/pkg/disruption'
share '  Tailor: NodeClaim lifecycle (with the fake cloud)' 'github.com/tailor-sh/tailor/pkg/lifecycle'
share 'sandbox agents' 'github.com/tailor-sh/tailor/pkg/sandbox'
share 'client-go informers' 'k8s.io/client-go/tools/cache'
share 'garbage collector' 'runtime.gcBgMarkWorker|runtime.gcAssistAlloc'
