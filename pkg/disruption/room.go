package disruption

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// room rules out, by resources alone, consolidations the planner could only refuse, so that a
// pass over a full fleet does not simulate every candidate to hear "no" each time.
//
// A consolidation succeeds only when every pod to move goes onto a node that is up now (a pod
// sent to capacity in flight, or to two new nodes, refuses it) or onto one new node with an
// offering cheaper than the candidates. The scheduler's NodeResourcesFit admits a pod only where
// its cpu, memory and pod slot fit what the node has left, so the pods a plan puts on the
// remaining nodes ask, in sum, at most for what those nodes have left, and the rest must fit the
// one new node's allocatable. When no offering cheaper than the candidates has that much, neither
// deleting nor replacing can work, and the probe is cut. When the remaining nodes could hold it
// all by sums, the probe runs: sums say nothing of how pods pack, labels, taints or spread.
// Nothing is cut when the planner's Filter does not run NodeResourcesFit (Planner.ResourcesFiltered).
type room struct {
	// spare is what each node that is up has left, none of it negative; total their sum.
	spare map[string]amount
	total amount
	// leaving are the requests of the pods of nodes already leaving: every removal moves them too.
	leaving amount
	// offerings are every available offering of the pools, cheapest first.
	offerings []pricedRoom
	// asks are the requests of each candidate's pods, summed on its first question: a pass asks
	// about a candidate again and again (multi-node consolidation's search, then single-node),
	// and its pods do not change within the pass.
	asks map[*Candidate]amount
}

// amount is cpu in millicores, memory in bytes and a count of pods.
type amount struct{ milliCPU, memory, pods int64 }

func (a amount) plus(b amount) amount {
	return amount{a.milliCPU + b.milliCPU, a.memory + b.memory, a.pods + b.pods}
}

func (a amount) minus(b amount) amount {
	return amount{a.milliCPU - b.milliCPU, a.memory - b.memory, a.pods - b.pods}
}

// covers reports whether a holds b in every dimension.
func (a amount) covers(b amount) bool {
	return a.milliCPU >= b.milliCPU && a.memory >= b.memory && a.pods >= b.pods
}

type pricedRoom struct {
	price        float64
	capacityType string
	allocatable  amount
}

// newRoom reads what the snapshot's nodes have left, leaving out nodes in flight (see room).
func newRoom(snapshot *simulation.Snapshot, view *planner.View, pools []planner.Pool) *room {
	r := &room{spare: map[string]amount{}, asks: map[*Candidate]amount{}}
	nodes, _ := snapshot.NodeInfos().List()
	for _, ni := range nodes {
		if _, inFlight := view.InFlight[ni.Node().Name]; inFlight {
			continue
		}
		left := spareOf(ni)
		r.spare[ni.Node().Name] = left
		r.total = r.total.plus(left)
	}
	for _, p := range view.Reschedulable {
		r.leaving = r.leaving.plus(requestsOf(p))
	}
	for _, pool := range pools {
		for _, it := range pool.InstanceTypes {
			alloc := it.Allocatable()
			a := amount{alloc.Cpu().MilliValue(), alloc.Memory().Value(), alloc.Pods().Value()}
			for _, o := range it.Offerings {
				if o.Available {
					r.offerings = append(r.offerings, pricedRoom{price: o.PricePerHour, capacityType: o.CapacityType, allocatable: a})
				}
			}
		}
	}
	sort.SliceStable(r.offerings, func(i, j int) bool { return r.offerings[i].price < r.offerings[j].price })
	return r
}

// hopeless reports whether removing cands cannot succeed by resources alone: their pods and
// those already leaving ask for more than the other nodes that are up have left, and no
// offering cheaper than price (spot ones only, when spot) holds the difference.
func (r *room) hopeless(cands []*Candidate, price float64, spot bool) bool {
	left := r.total
	need := r.leaving
	for _, c := range cands {
		left = left.minus(r.spare[c.Node.Name])
		need = need.plus(r.asksOf(c))
	}
	short := need.minus(left)
	short = amount{max(0, short.milliCPU), max(0, short.memory), max(0, short.pods)}
	if (short == amount{}) {
		return false
	}
	for _, o := range r.offerings {
		if o.price >= price {
			break
		}
		if spot && o.capacityType != karpv1.CapacityTypeSpot {
			continue
		}
		if o.allocatable.covers(short) {
			return false
		}
	}
	return true
}

// asksOf is the sum of the candidate's pods' requests.
func (r *room) asksOf(c *Candidate) amount {
	if a, ok := r.asks[c]; ok {
		return a
	}
	var a amount
	for _, p := range c.Pods {
		a = a.plus(requestsOf(p))
	}
	r.asks[c] = a
	return a
}

// spareOf is what NodeResourcesFit sees left on a node, none of it negative.
func spareOf(ni fwk.NodeInfo) amount {
	alloc, used := ni.GetAllocatable(), ni.GetRequested()
	return amount{
		milliCPU: max(0, alloc.GetMilliCPU()-used.GetMilliCPU()),
		memory:   max(0, alloc.GetMemory()-used.GetMemory()),
		pods:     max(0, int64(alloc.GetAllowedPodNumber())-int64(len(ni.GetPods()))),
	}
}

// requestsOf is a pod's cpu and memory as NodeResourcesFit counts them at the least, and its slot.
func requestsOf(p *corev1.Pod) amount {
	r := simulation.MinRequests(p)
	return amount{milliCPU: r.MilliCPU, memory: r.Memory, pods: 1}
}
