package top

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/labels"
	nodeutil "k8s.io/kubernetes/pkg/util/node"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/provision/bound"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// Cluster is what the watches hold: the objects a snapshot is built from.
type Cluster struct {
	Nodes      []*corev1.Node
	Pods       []*corev1.Pod
	NodeClaims []*karpv1.NodeClaim
	NodePools  []*karpv1.NodePool
	Events     []*eventsv1.Event
}

// Options say how to price and which part of the fleet to show.
type Options struct {
	Now time.Time
	// Prices prices each node; PricesName says what it is, for the header.
	Prices     Pricer
	PricesName string
	// Catalog gives the instance shapes the lower bound may cover pods with; pass it through
	// Repriced so that its prices are Prices'.
	Catalog []*cloud.InstanceType
	Filter  Filter
	Sort    SortKey
	// Decisions is how many of the latest disruption decisions to keep; 10 when zero.
	Decisions int
	// Requests, when set, remembers pods' requests from one Build to the next.
	Requests *Requests
}

// Build makes the snapshot. It reads only its arguments.
func Build(c Cluster, o Options) (*Snapshot, error) {
	if o.Decisions == 0 {
		o.Decisions = 10
	}
	s := &Snapshot{Time: o.Now, Prices: o.PricesName, Filter: o.Filter.String(),
		NodePools: []NodePool{}, Nodes: []Node{}, Pending: []Pending{}, Launching: []Claim{}, Decisions: []Decision{}}
	s.addNodes(c, o)
	running := s.addPods(c, o)
	o.Requests.sweep()
	s.addTotals(c, o)
	s.Fleet.PendingPods = len(s.Pending)
	lower, err := bound.LowerBoundOf(float64(running.cpuMilli)/1e3, float64(running.memBytes)/(1<<30), o.Catalog)
	if err != nil {
		return nil, fmt.Errorf("the lower bound of the %d running pods: %w", running.pods, err)
	}
	s.Fleet.LowerBoundPerHour = lower
	if lower > 0 {
		s.Fleet.PriceToBound = s.Fleet.PricePerHour / lower
	}
	for _, nc := range c.NodeClaims {
		if nc.IsTrue(karpv1.ConditionTypeInitialized) && nc.DeletionTimestamp == nil {
			continue
		}
		if !o.Filter.claimMatches(nc.Labels) {
			continue
		}
		s.Launching = append(s.Launching, newClaim(nc))
	}
	sort.Slice(s.Launching, func(i, j int) bool { return s.Launching[i].Name < s.Launching[j].Name })
	sort.Slice(s.Pending, func(i, j int) bool { return s.Pending[i].Pod < s.Pending[j].Pod })
	s.Decisions = decisions(c.Events, o.Decisions)
	sortNodes(s.Nodes, o.Sort)
	return s, nil
}

// addNodes adds a row for each node the filter shows.
func (s *Snapshot) addNodes(c Cluster, o Options) {
	claimOf := map[string]string{}
	for _, nc := range c.NodeClaims {
		if nc.Status.NodeName != "" {
			claimOf[nc.Status.NodeName] = nc.Name
		}
	}
	for _, n := range c.Nodes {
		if o.Filter.nodeMatches(n.Labels) {
			s.Nodes = append(s.Nodes, newNode(n, claimOf[n.Name], o.Prices))
		}
	}
}

// runningPods are the pods running on the nodes shown, summed for the lower bound.
type runningPods struct {
	pods               int
	cpuMilli, memBytes int64
}

// addPods adds the pods' requests to the nodes shown, and the pending pods with what was last
// said about them; it returns the sum of the running pods.
func (s *Snapshot) addPods(c Cluster, o Options) runningPods {
	shown := map[string]*Node{}
	for i := range s.Nodes {
		shown[s.Nodes[i].Name] = &s.Nodes[i]
	}
	var running runningPods
	reasons := podReasons(c.Events)
	for _, p := range c.Pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if p.Spec.NodeName == "" {
			if p.DeletionTimestamp != nil {
				continue
			}
			key := p.Namespace + "/" + p.Name
			why := reasons[key]
			s.Pending = append(s.Pending, Pending{Pod: key, Reason: why.Reason, Message: why.Note,
				Nominated: p.Status.NominatedNodeName, Created: p.CreationTimestamp.Time})
			continue
		}
		n := shown[p.Spec.NodeName]
		if n == nil {
			continue
		}
		cpu, mem := o.Requests.of(p)
		n.Pods++
		n.Usage.CPURequestedMilli += cpu
		n.Usage.MemoryRequested += mem
		running.pods++
		running.cpuMilli += cpu
		running.memBytes += mem
	}
	return running
}

// addTotals sums the nodes shown into the fleet and into the NodePools the filter shows, with
// each pool's capacity beside its limits.
func (s *Snapshot) addTotals(c Cluster, o Options) {
	pools := map[string]*NodePool{}
	for _, np := range c.NodePools {
		if o.Filter.NodePool != "" && np.Name != o.Filter.NodePool {
			continue
		}
		pools[np.Name] = &NodePool{Name: np.Name, Limits: quantities(corev1.ResourceList(np.Spec.Limits))}
	}
	capacity := map[string]corev1.ResourceList{}
	nodes := map[string]*corev1.Node{}
	for _, n := range c.Nodes {
		nodes[n.Name] = n
	}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		f := &s.Fleet
		f.Nodes++
		f.Pods += n.Pods
		f.Usage.add(n.Usage)
		if n.Priced {
			f.PricePerHour += n.PricePerHour
		} else {
			f.UnpricedNodes++
		}
		if pool := pools[n.NodePool]; pool != nil {
			pool.Nodes++
			pool.Pods += n.Pods
			pool.Usage.add(n.Usage)
			pool.PricePerHour += n.PricePerHour
			capacity[n.NodePool] = scheduling.Add(capacity[n.NodePool], nodes[n.Name].Status.Capacity)
		}
	}
	for name, pool := range pools {
		if len(pool.Limits) > 0 {
			pool.Capacity = map[string]string{}
			for r := range pool.Limits {
				q := capacity[name][corev1.ResourceName(r)]
				pool.Capacity[r] = q.String()
			}
		}
		s.NodePools = append(s.NodePools, *pool)
	}
	sort.Slice(s.NodePools, func(i, j int) bool { return s.NodePools[i].Name < s.NodePools[j].Name })
}

func newNode(n *corev1.Node, claim string, prices Pricer) Node {
	it, zone, ct := offering(n.Labels)
	row := Node{Name: n.Name, NodePool: n.Labels[karpv1.NodePoolLabelKey], NodeClaim: claim, InstanceType: it, Zone: zone,
		CapacityType: ct, Created: n.CreationTimestamp.Time, State: nodeState(n)}
	row.Usage.CPUAllocatableMilli = n.Status.Allocatable.Cpu().MilliValue()
	row.Usage.MemoryAllocatable = n.Status.Allocatable.Memory().Value()
	if it != "" && zone != "" && ct != "" && prices != nil {
		row.PricePerHour, row.Priced = prices.Price(it, zone, ct)
	}
	return row
}

func nodeState(n *corev1.Node) string {
	if n.DeletionTimestamp != nil {
		return "Disrupting"
	}
	for _, t := range n.Spec.Taints {
		if t.Key == karpv1.DisruptedTaintKey {
			return "Disrupting"
		}
	}
	if nodeutil.IsNodeReady(n) {
		return "Ready"
	}
	return "NotReady"
}

func newClaim(nc *karpv1.NodeClaim) Claim {
	it, zone, ct := offering(nc.Labels)
	c := Claim{Name: nc.Name, NodePool: nc.Labels[karpv1.NodePoolLabelKey], InstanceType: it, Zone: zone, CapacityType: ct,
		Node: nc.Status.NodeName, State: "Pending", Created: nc.CreationTimestamp.Time}
	for _, cond := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered} {
		if nc.IsTrue(cond) {
			c.State = cond
		}
	}
	if nc.DeletionTimestamp != nil {
		c.State = "Deleting"
	}
	return c
}

func (u *Usage) add(v Usage) {
	u.CPURequestedMilli += v.CPURequestedMilli
	u.CPUAllocatableMilli += v.CPUAllocatableMilli
	u.MemoryRequested += v.MemoryRequested
	u.MemoryAllocatable += v.MemoryAllocatable
}

func quantities(list corev1.ResourceList) map[string]string {
	if len(list) == 0 {
		return nil
	}
	out := make(map[string]string, len(list))
	for k, q := range list {
		out[string(k)] = q.String()
	}
	return out
}

// Filter narrows the view to one NodePool and/or the nodes a label selector matches.
type Filter struct {
	NodePool string
	Selector labels.Selector
}

func (f Filter) nodeMatches(l map[string]string) bool {
	if f.NodePool != "" && l[karpv1.NodePoolLabelKey] != f.NodePool {
		return false
	}
	return f.Selector == nil || f.Selector.Matches(labels.Set(l))
}

// claimMatches is nodeMatches for a NodeClaim, whose labels are its node's to be.
func (f Filter) claimMatches(l map[string]string) bool { return f.nodeMatches(l) }

func (f Filter) String() string {
	var parts []string
	if f.NodePool != "" {
		parts = append(parts, "nodepool="+f.NodePool)
	}
	if f.Selector != nil && !f.Selector.Empty() {
		parts = append(parts, f.Selector.String())
	}
	return strings.Join(parts, ",")
}
