package provreq

import (
	"cmp"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
)

// BookedSchedulerName is the scheduler name of the pods that stand for booked room. No scheduler
// and no provisioner owns them, so none plans them as pending pods; they only take room.
const BookedSchedulerName = "tailor-provisioning-request-booking"

// slot is where one of a request's pods is booked: an existing node, or a NodeClaim that may not
// have its node yet.
type slot struct {
	pod   *corev1.Pod
	node  string
	claim string
}

// booking is the room kept for one request's pods, and the NodeClaims launched for it.
type booking struct {
	slots  []slot
	claims []string
}

// Bookings keeps the room of Provisioned (and launching) ProvisioningRequests for the pods that
// will consume them. It shows each booked pod that has no consumer yet as a pod on its node (or
// nominated to its NodeClaim while the node is not there), through BookedPods, so that the
// provisioner does not plan other pods into that room and the disruption loop neither
// consolidates the node nor counts it empty: the pods carry karpenter.sh/do-not-disrupt.
// Bookings live in memory; the controller books again what a restart forgot.
type Bookings struct {
	claims karplisters.NodeClaimLister
	nodes  corelisters.NodeLister
	// real are the cluster's pods, once BookedPods has been given them.
	real corelisters.PodLister

	mu    sync.Mutex
	byKey map[string]*booking
}

// NewBookings returns empty bookings that resolve NodeClaims to their nodes with the listers.
func NewBookings(claims karplisters.NodeClaimLister, nodes corelisters.NodeLister) *Bookings {
	return &Bookings{claims: claims, nodes: nodes, byKey: map[string]*booking{}}
}

// book keeps room for a request (namespace/name), replacing what was kept for it.
func (b *Bookings) book(key string, bk *booking) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.byKey[key] = bk
}

// release frees a request's room.
func (b *Bookings) release(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.byKey, key)
}

// get returns a request's booking, or nil.
func (b *Bookings) get(key string) *booking {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.byKey[key]
}

// empty reports whether nothing is booked.
func (b *Bookings) empty() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.byKey) == 0
}

// placed is a booked pod where it stands now: bound to a node, or nominated to a claim's stand-in.
func (b *Bookings) placed(s slot) *corev1.Pod {
	pod := s.pod.DeepCopy()
	// Named as a booking, for the Events and logs that name the pods on a node (a node the
	// disruption loop leaves alone names the pod that blocks it).
	pod.Name = "booking-" + pod.Name
	pod.Spec.SchedulerName = BookedSchedulerName
	pod.Annotations[karpv1.DoNotDisruptAnnotationKey] = "true"
	if s.node != "" {
		pod.Spec.NodeName = s.node
		return pod
	}
	claim, err := b.claims.Get(s.claim)
	if err != nil || claim.DeletionTimestamp != nil {
		return nil // gone: the controller sees it and launches again or fails the request
	}
	if name := claim.Status.NodeName; name != "" {
		if _, err := b.nodes.Get(name); err == nil {
			pod.Spec.NodeName = name
			return pod
		}
		pod.Status.NominatedNodeName = name // the planner names a claim's stand-in after its node
		return pod
	}
	pod.Status.NominatedNodeName = claim.Name
	return pod
}

// booked returns the pods that stand for booked room, given the cluster's real pods: a request
// keeps room for as many of its pods as have no consumer yet (a pod annotated to consume it, in
// its namespace). A consumer bound to a booked node frees that node's room; the others free room
// from the end of the booking.
func (b *Bookings) booked(clusterPods []*corev1.Pod) []*corev1.Pod {
	out, _ := b.split(clusterPods)
	return out
}

// split is booked, and for each unbound consumer the node (or the stand-in of the NodeClaim) of
// the room it frees, where the planner sends it first.
func (b *Bookings) split(clusterPods []*corev1.Pod) ([]*corev1.Pod, map[types.UID]string) {
	b.mu.Lock()
	keys := make([]string, 0, len(b.byKey))
	for k := range b.byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	bookings := make([]*booking, len(keys))
	for i, k := range keys {
		bookings[i] = b.byKey[k]
	}
	b.mu.Unlock()
	if len(keys) == 0 {
		return nil, nil
	}
	consumers := map[string][]*corev1.Pod{}
	for _, p := range clusterPods {
		if name := consumes(p); name != "" {
			consumers[p.Namespace+"/"+name] = append(consumers[p.Namespace+"/"+name], p)
		}
	}
	var out []*corev1.Pod
	freed := map[types.UID]string{}
	for i, k := range keys {
		var placed []*corev1.Pod
		for _, s := range bookings[i].slots {
			if p := b.placed(s); p != nil {
				placed = append(placed, p)
			}
		}
		out = append(out, unconsumed(placed, consumers[k], freed)...)
	}
	return out, freed
}

// unconsumed drops one booked pod per consumer: the one on the consumer's node if there is one,
// else one from the end, whose place it notes in freed for a consumer not yet bound. Consumers go
// in name order, so that every listing frees the same room for the same pod.
func unconsumed(placed, consumers []*corev1.Pod, freed map[types.UID]string) []*corev1.Pod {
	sort.Slice(consumers, func(i, j int) bool { return consumers[i].Name < consumers[j].Name })
	left := 0
	var unbound []*corev1.Pod
	for _, c := range consumers {
		if c.Spec.NodeName == "" {
			unbound = append(unbound, c)
			continue
		}
		if i := indexOnNode(placed, c.Spec.NodeName); i >= 0 {
			placed = append(placed[:i], placed[i+1:]...)
			continue
		}
		left++
	}
	keep := max(0, len(placed)-left-len(unbound))
	for i, c := range unbound {
		if j := len(placed) - 1 - i; j >= keep {
			freed[c.UID] = cmp.Or(placed[j].Spec.NodeName, placed[j].Status.NominatedNodeName)
		}
	}
	return placed[:keep]
}

func indexOnNode(pods []*corev1.Pod, node string) int {
	for i, p := range pods {
		if p.Spec.NodeName == node {
			return i
		}
	}
	return -1
}

// Destinations maps the pending pods that consume a booked request to the node (or the stand-in
// of the NodeClaim still launching) of the room they free, so that the provisioner's plan sends
// them there first rather than to whatever room first fit finds.
func (b *Bookings) Destinations(pending []*corev1.Pod) map[types.UID]string {
	b.mu.Lock()
	lister, none := b.real, len(b.byKey) == 0
	b.mu.Unlock()
	if none || lister == nil {
		return nil
	}
	clusterPods, err := lister.List(labels.Everything())
	if err != nil {
		return nil
	}
	_, freed := b.split(clusterPods)
	out := map[types.UID]string{}
	for _, p := range pending {
		if node, ok := freed[p.UID]; ok && node != "" {
			out[p.UID] = node
		}
	}
	return out
}
