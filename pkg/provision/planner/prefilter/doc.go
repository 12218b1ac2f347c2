// Package prefilter keeps the scheduler's PreFilter states of a plan's pending pods, one per pod
// spec, and brings a kept state up to date as the plan places pods instead of running PreFilter
// afresh for every pod (States). PodTopologySpread's state, which the framework's AddPod leaves
// incomplete, is mended here (spreadstate.go).
package prefilter
