// Package planner decides where pending pods go: Input (the cluster as the scheduler sees it, the
// pending pods, the NodePools with their instance types) becomes a Plan (pods that fit nodes
// that exist or are launching, NodeClaims to create, pods nothing can hold and why). Every "does
// this pod fit there?" is answered by the scheduler profile's own Filter plugins, through
// pkg/simulation.
//
// It is a pure function of its input: no client, lister, clock, event recorder or metric. The
// provisioner (pkg/provision) reads the cluster, calls it, and writes what it decided;
// consolidation (pkg/disruption) and `tailor plan` call it on views of their own.
//
// This package is the plan in progress: the claims it opens and fills, each pod's steps, and the
// check of the plan as a whole. What a plan reads, and the indexes it keeps, are in sub-packages
// that know nothing of its claims: nodepool (a NodePool's offerings), podkeys, prefilter,
// preferences, packing, clusterview, nodeclaim, explain, daemons, roomindex and memo
// (docs/design/planner.md).
package planner
