// Package schedperf measures what Tailor costs the scheduler it lives in, against the vanilla
// kube-scheduler on the same control plane and in the same run: scheduling throughput (in the
// style of kube-scheduler's scheduler_perf: SchedulingBasic, and topology spread with pod
// anti-affinity) and the resident memory of the scheduler process. It holds benchmarks only;
// nothing here runs without -bench.
package schedperf
