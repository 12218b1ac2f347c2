// Package top is `tailor top`: a live view of a Tailor fleet. Build turns the objects a set of
// informers holds (nodes, pods, NodeClaims, NodePools, events) into a Snapshot, a plain value
// that `--once -o json` prints and Render draws; the terminal program (ui.go) rebuilds it when a
// watch reports a change. Build and Render are pure, so the golden test and the benchmark drive
// them without a cluster.
package top

import "time"

// Snapshot is the fleet at one instant. The JSON field names are a stable interface for scripts.
type Snapshot struct {
	Time time.Time `json:"time"`
	// Prices says where node prices came from, e.g. "aws pricing API, us-west-2".
	Prices string `json:"prices"`
	// Filter is the NodePool and label selector the snapshot was narrowed to ("" for none).
	Filter    string     `json:"filter,omitempty"`
	Fleet     Fleet      `json:"fleet"`
	NodePools []NodePool `json:"nodePools"`
	Nodes     []Node     `json:"nodes"`
	Pending   []Pending  `json:"pending"`
	Launching []Claim    `json:"launching"`
	Decisions []Decision `json:"decisions"`
}

// Fleet is the totals over the nodes shown.
type Fleet struct {
	Nodes int `json:"nodes"`
	// Pods are the pods bound to those nodes that have not finished.
	Pods int `json:"pods"`
	// PendingPods are the pods no node holds yet.
	PendingPods int   `json:"pendingPods"`
	Usage       Usage `json:"usage"`
	// PricePerHour sums the nodes' prices; UnpricedNodes counts those without one (no
	// instance-type, zone or capacity-type label, or a type the price source does not know).
	PricePerHour  float64 `json:"pricePerHour"`
	UnpricedNodes int     `json:"unpricedNodes"`
	// LowerBoundPerHour is what `tailor plan` reports as its LP lower bound, for the pods that
	// run on these nodes now: no set of nodes holding their cpu and memory costs less.
	LowerBoundPerHour float64 `json:"lowerBoundPerHour"`
	// PriceToBound is PricePerHour / LowerBoundPerHour, 0 when the bound is 0.
	PriceToBound float64 `json:"priceToBound"`
}

// Usage is cpu (millicores) and memory (bytes) requested by pods over allocatable.
type Usage struct {
	CPURequestedMilli   int64 `json:"cpuRequestedMilli"`
	CPUAllocatableMilli int64 `json:"cpuAllocatableMilli"`
	MemoryRequested     int64 `json:"memoryRequestedBytes"`
	MemoryAllocatable   int64 `json:"memoryAllocatableBytes"`
}

// NodePool is one NodePool's share of the fleet, and its limits.
type NodePool struct {
	Name         string  `json:"name"`
	Nodes        int     `json:"nodes"`
	Pods         int     `json:"pods"`
	Usage        Usage   `json:"usage"`
	PricePerHour float64 `json:"pricePerHour"`
	// Limits are spec.limits; Capacity sums the capacity of the pool's nodes for the same
	// resources, as Tailor counts a pool against them.
	Limits   map[string]string `json:"limits,omitempty"`
	Capacity map[string]string `json:"capacity,omitempty"`
}

// Node is one node.
type Node struct {
	Name         string    `json:"name"`
	NodePool     string    `json:"nodePool"`
	NodeClaim    string    `json:"nodeClaim,omitempty"`
	InstanceType string    `json:"instanceType"`
	Zone         string    `json:"zone"`
	CapacityType string    `json:"capacityType"`
	Created      time.Time `json:"created"`
	Usage        Usage     `json:"usage"`
	Pods         int       `json:"pods"`
	PricePerHour float64   `json:"pricePerHour"`
	Priced       bool      `json:"priced"`
	// State is Ready, NotReady, or Disrupting (tainted karpenter.sh/disrupted or being deleted).
	State string `json:"state"`
}

// Pending is a pod no node holds, with the latest reason Tailor or the scheduler gave.
type Pending struct {
	Pod string `json:"pod"`
	// Reason is the Event's reason (FailedProvisioning, FailedScheduling, Stranded), Message its
	// note; both empty when nothing was said yet.
	Reason    string    `json:"reason,omitempty"`
	Message   string    `json:"message,omitempty"`
	Nominated string    `json:"nominatedNode,omitempty"`
	Created   time.Time `json:"created"`
}

// Claim is a NodeClaim not yet initialized: capacity on its way.
type Claim struct {
	Name         string `json:"name"`
	NodePool     string `json:"nodePool"`
	InstanceType string `json:"instanceType,omitempty"`
	Zone         string `json:"zone,omitempty"`
	CapacityType string `json:"capacityType,omitempty"`
	Node         string `json:"node,omitempty"`
	// State is the last condition reached: Pending, Launched or Registered; or Deleting.
	State   string    `json:"state"`
	Created time.Time `json:"created"`
}

// Decision is a disruption decision as Tailor announced it in Events on the NodeClaims it
// removed: one per message, however many claims it named.
type Decision struct {
	Time       time.Time `json:"time"`
	Reason     string    `json:"reason"`
	Message    string    `json:"message"`
	NodeClaims []string  `json:"nodeClaims"`
	// SavingsPerHour is what the message says the decision saves (negative: costs more).
	SavingsPerHour float64 `json:"savingsPerHour"`
}
