// Package plan answers "what would Tailor launch for these manifests?" offline: it reads
// NodePools, workloads and (optionally) existing nodes from files, runs the provisioner's own
// planner with kube-scheduler's default Filter plugins over a simulated catalog, and reports the
// NodeClaims, their price, the pods no NodePool can hold and why, and how far the price can be
// from optimal (the LP lower bound). Nothing is written anywhere.
package plan

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	pricebound "github.com/tailor-sh/tailor/pkg/provision/bound"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
	"github.com/tailor-sh/tailor/pkg/scheduling"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// Options say whose pods to plan and with what catalog.
type Options struct {
	// SchedulerName selects the pods to plan; others are listed as ignored.
	SchedulerName string
	// Catalog is every NodePool's instance types.
	Catalog []*cloud.InstanceType
	// CatalogName describes the catalog in the result, e.g. that it is simulated.
	CatalogName string
	// ClusterName, when set, is the cluster the EC2NodeClasses are checked against: a discovery
	// tag or node role naming another cluster is warned about, since it would select nothing.
	ClusterName string
}

// Result is a plan as `tailor plan` prints it. The JSON field names are a stable interface.
type Result struct {
	SchedulerName string `json:"schedulerName"`
	Catalog       string `json:"catalog"`
	// Pending counts the pods planned: unbound, of SchedulerName.
	Pending int `json:"pending"`
	// NodeClaims are the claims the provisioner would create, in the order it would.
	NodeClaims []NodeClaim `json:"nodeClaims"`
	// FitsExisting are pending pods that fit an existing node; the scheduler would place them.
	FitsExisting []string `json:"fitsExisting"`
	// Unplaceable are pending pods no NodePool can hold.
	Unplaceable []UnplaceablePod `json:"unplaceable"`
	// Ignored are pods not planned: another scheduler's, finished, or bound to a node the
	// manifests do not hold.
	Ignored []IgnoredPod `json:"ignoredPods"`
	// Skipped are objects of kinds a plan does not read.
	Skipped []SkippedObject `json:"skippedObjects"`
	// Warnings are things in the manifests that the plan took a guess about.
	Warnings []string `json:"warnings"`
	// PricePerHour sums each NodeClaim at its cheapest option.
	PricePerHour float64 `json:"pricePerHour"`
	// LowerBoundPerHour is pricebound.LowerBound of the pods on the NodeClaims over the whole
	// catalog: no set of nodes holding them costs less.
	LowerBoundPerHour float64 `json:"lowerBoundPerHour"`
	// PriceToBound is PricePerHour / LowerBoundPerHour (0 when the bound is 0): how far from the
	// cheapest possible fleet the plan can be, at most.
	PriceToBound float64 `json:"priceToBound"`
}

// NodeClaim is one planned NodeClaim, described by its cheapest option: what the cloud launches
// when that option has capacity.
type NodeClaim struct {
	NodePool     string  `json:"nodePool"`
	InstanceType string  `json:"instanceType"`
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	PricePerHour float64 `json:"pricePerHour"`
	// Options counts the offerings (instance type, zone, capacity type) every pod of the claim
	// fits, which the cloud may fall back on.
	Options int `json:"options"`
	// InstanceTypes are the instance types the NodeClaim would list, cheapest first, at most
	// planner.MaxInstanceTypes.
	InstanceTypes []string `json:"instanceTypes"`
	// Requests sums the requests of the pods and the DaemonSet pods, as the NodeClaim's
	// spec.resources.requests would; Allocatable is the cheapest option's.
	Requests    map[corev1.ResourceName]string `json:"requests"`
	Allocatable map[corev1.ResourceName]string `json:"allocatable"`
	// Pods are namespace/name, in the order the planner placed them.
	Pods []string `json:"pods"`
	// DaemonSets are namespace/name of the DaemonSets that would run a pod on the node.
	DaemonSets []string `json:"daemonSets"`
}

// UnplaceablePod is a pod no NodePool can hold.
type UnplaceablePod struct {
	Pod     string   `json:"pod"`
	Reasons []Reason `json:"reasons"`
}

// Reason is why one NodePool cannot hold a pod; NodePool is empty for a reason that applies to
// all of them (the pod's own PreFilter refused it, or there is no NodePool).
type Reason struct {
	NodePool string `json:"nodePool,omitempty"`
	Reason   string `json:"reason"`
}

// IgnoredPod is a pod the plan did not plan, and why.
type IgnoredPod struct {
	Pod    string `json:"pod"`
	Reason string `json:"reason"`
}

// Run plans the manifests' pending pods as the provisioner would on a cluster holding exactly
// the manifests' nodes and bound pods.
func Run(ctx context.Context, m *Manifests, opts Options) (*Result, error) {
	res := &Result{SchedulerName: opts.SchedulerName, Catalog: opts.CatalogName, Skipped: m.Skipped,
		NodeClaims: []NodeClaim{}, FitsExisting: []string{}, Unplaceable: []UnplaceablePod{}, Ignored: []IgnoredPod{},
		Warnings: append([]string{}, m.Warnings...)}
	if res.Skipped == nil {
		res.Skipped = []SkippedObject{}
	}
	nodes := map[string]bool{}
	for _, n := range m.Nodes {
		nodes[n.Name] = true
	}
	var pending, bound []*corev1.Pod
	for _, p := range m.Pods {
		switch {
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
			res.Ignored = append(res.Ignored, IgnoredPod{Pod: name(p), Reason: fmt.Sprintf("phase is %s", p.Status.Phase)})
		case p.Spec.NodeName != "" && nodes[p.Spec.NodeName]:
			bound = append(bound, p)
		case p.Spec.NodeName != "":
			res.Ignored = append(res.Ignored, IgnoredPod{Pod: name(p), Reason: fmt.Sprintf("bound to node %s, which is not in the manifests", p.Spec.NodeName)})
		case p.Spec.SchedulerName != opts.SchedulerName:
			res.Ignored = append(res.Ignored, IgnoredPod{Pod: name(p), Reason: fmt.Sprintf("schedulerName is %s, not %s", p.Spec.SchedulerName, opts.SchedulerName)})
		default:
			pending = append(pending, p)
		}
	}
	res.Pending = len(pending)

	pools := make([]planner.Pool, 0, len(m.NodePools))
	used := usedByPool(m.Nodes)
	classes := map[string]bool{}
	for _, nc := range m.NodeClasses {
		classes[nc.Name] = true
		res.Warnings = append(res.Warnings, clusterWarnings(nc, opts.ClusterName)...)
	}
	for _, np := range m.NodePools {
		if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil && ref.Kind == "EC2NodeClass" && !classes[ref.Name] {
			res.Warnings = append(res.Warnings, fmt.Sprintf("NodePool %s refers to EC2NodeClass %s, which is not in the manifests; planned as if it were ready", np.Name, ref.Name))
		}
		pools = append(pools, planner.Pool{NodePool: np, InstanceTypes: opts.Catalog, Used: used[np.Name]})
	}
	planner.SortPools(pools)

	sim, err := simulation.NewOffline(ctx, opts.SchedulerName, simulatorObjects(m)...)
	if err != nil {
		return nil, err
	}
	plan := planner.NewPlanner(sim).Plan(ctx, planner.Input{Pending: pending, Nodes: m.Nodes, Pods: bound, Pools: pools,
		DaemonSets: planner.DaemonSetPods(m.DaemonSets)})

	var placed []*corev1.Pod
	for _, pc := range plan.Claims {
		claim := nodeClaim(pc)
		res.NodeClaims = append(res.NodeClaims, claim)
		res.PricePerHour += claim.PricePerHour
		placed = append(placed, pc.Pods...)
	}
	for _, p := range plan.FitsExisting {
		res.FitsExisting = append(res.FitsExisting, name(p))
	}
	for _, u := range plan.Unplaceable {
		up := UnplaceablePod{Pod: name(u.Pod)}
		for pool, why := range u.Reasons {
			up.Reasons = append(up.Reasons, Reason{NodePool: pool, Reason: why})
		}
		sort.Slice(up.Reasons, func(i, j int) bool { return up.Reasons[i].NodePool < up.Reasons[j].NodePool })
		res.Unplaceable = append(res.Unplaceable, up)
	}
	bound64, err := pricebound.LowerBound(placed, opts.Catalog)
	if err != nil {
		return nil, fmt.Errorf("computing the lower bound: %w", err)
	}
	res.LowerBoundPerHour = bound64
	if bound64 > 0 {
		res.PriceToBound = res.PricePerHour / bound64
	}
	return res, nil
}

func nodeClaim(pc *planner.PlannedClaim) NodeClaim {
	cheapest := pc.Options[0]
	out := NodeClaim{
		NodePool:     pc.NodePool.Name,
		InstanceType: cheapest.InstanceType.Name,
		Zone:         cheapest.Offering.Zone,
		CapacityType: cheapest.Offering.CapacityType,
		PricePerHour: cheapest.Offering.PricePerHour,
		Options:      len(pc.Options),
		Allocatable:  quantities(cheapest.InstanceType.Allocatable()),
	}
	claim := planner.NewNodeClaim(pc)
	for _, r := range claim.Spec.Requirements {
		if r.Key == corev1.LabelInstanceTypeStable && r.Operator == corev1.NodeSelectorOpIn {
			out.InstanceTypes = r.Values
		}
	}
	out.Requests = quantities(claim.Spec.Resources.Requests)
	for _, p := range pc.Pods {
		out.Pods = append(out.Pods, name(p))
	}
	out.DaemonSets = []string{}
	for _, d := range pc.Daemons {
		for _, ref := range d.OwnerReferences {
			if ref.Kind == "DaemonSet" {
				out.DaemonSets = append(out.DaemonSets, d.Namespace+"/"+ref.Name)
			}
		}
	}
	return out
}

// usedByPool counts existing nodes against their NodePool's limits, as the NodeClaims behind
// them would count: their capacity, and one node each.
func usedByPool(nodes []*corev1.Node) map[string]corev1.ResourceList {
	out := map[string]corev1.ResourceList{}
	for _, n := range nodes {
		pool := n.Labels[karpv1.NodePoolLabelKey]
		if pool == "" {
			continue
		}
		used := scheduling.Add(out[pool], n.Status.Capacity)
		out[pool] = scheduling.Add(used, corev1.ResourceList{planner.ResourceNodes: *resource.NewQuantity(1, resource.DecimalSI)})
	}
	return out
}

// simulatorObjects are what the Filter plugins read besides nodes and pods: the manifests'
// volumes and namespaces, plus every namespace a pod is in that the manifests do not define, as
// the cluster would have it (with its kubernetes.io/metadata.name label, which namespaceSelectors
// match on).
func simulatorObjects(m *Manifests) []runtime.Object {
	out := append([]runtime.Object(nil), m.Volumes...)
	have := map[string]bool{}
	for _, o := range m.Volumes {
		if ns, ok := o.(*corev1.Namespace); ok {
			have[ns.Name] = true
		}
	}
	var namespaces []string
	for _, p := range m.Pods {
		namespaces = append(namespaces, p.Namespace)
	}
	for _, ds := range m.DaemonSets {
		namespaces = append(namespaces, ds.Namespace)
	}
	for _, ns := range namespaces {
		if have[ns] {
			continue
		}
		have[ns] = true
		out = append(out, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{corev1.LabelMetadataName: ns}}})
	}
	return out
}

func quantities(list corev1.ResourceList) map[corev1.ResourceName]string {
	out := make(map[corev1.ResourceName]string, len(list))
	for k, q := range list {
		out[k] = q.String()
	}
	return out
}

func name(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }
