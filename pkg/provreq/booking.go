package provreq

import (
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
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
func (b *Bookings) booked(real []*corev1.Pod) []*corev1.Pod {
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
		return nil
	}
	consumers := map[string][]*corev1.Pod{}
	for _, p := range real {
		if name := consumes(p); name != "" {
			consumers[p.Namespace+"/"+name] = append(consumers[p.Namespace+"/"+name], p)
		}
	}
	var out []*corev1.Pod
	for i, k := range keys {
		var placed []*corev1.Pod
		for _, s := range bookings[i].slots {
			if p := b.placed(s); p != nil {
				placed = append(placed, p)
			}
		}
		out = append(out, unconsumed(placed, consumers[k])...)
	}
	return out
}

// unconsumed drops one booked pod per consumer: the one on the consumer's node if there is one,
// else the last.
func unconsumed(placed, consumers []*corev1.Pod) []*corev1.Pod {
	left := 0
	for _, c := range consumers {
		i := -1
		if c.Spec.NodeName != "" {
			i = indexOnNode(placed, c.Spec.NodeName)
		}
		if i < 0 {
			left++
			continue
		}
		placed = append(placed[:i], placed[i+1:]...)
	}
	return placed[:max(0, len(placed)-left)]
}

func indexOnNode(pods []*corev1.Pod, node string) int {
	for i, p := range pods {
		if p.Spec.NodeName == node {
			return i
		}
	}
	return -1
}

// BookedPods returns pods as a lister that also lists the booked pods, for the provisioner and
// the disruption loop. Only List and Get are asked of it.
func (b *Bookings) BookedPods(pods corelisters.PodLister) corelisters.PodLister {
	return bookedLister{real: pods, b: b}
}

type bookedLister struct {
	real corelisters.PodLister
	b    *Bookings
}

func (l bookedLister) List(selector labels.Selector) ([]*corev1.Pod, error) {
	all, err := l.real.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	booked := l.b.booked(all)
	if len(booked) == 0 && selector.Empty() {
		return all, nil
	}
	out := make([]*corev1.Pod, 0, len(all)+len(booked))
	for _, p := range append(all, booked...) {
		if selector.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out, nil
}

func (l bookedLister) Pods(namespace string) corelisters.PodNamespaceLister {
	return bookedNamespaceLister{PodNamespaceLister: l.real.Pods(namespace), all: l, namespace: namespace}
}

// bookedNamespaceLister lists one namespace's pods and booked pods; Get reads real pods only, as
// nothing gets a booked pod by name.
type bookedNamespaceLister struct {
	corelisters.PodNamespaceLister
	all       bookedLister
	namespace string
}

func (l bookedNamespaceLister) List(selector labels.Selector) ([]*corev1.Pod, error) {
	if l.all.b.empty() {
		return l.PodNamespaceLister.List(selector) // the namespace's index, not every pod
	}
	all, err := l.all.List(selector)
	if err != nil {
		return nil, err
	}
	out := all[:0:0]
	for _, p := range all {
		if p.Namespace == l.namespace {
			out = append(out, p)
		}
	}
	return out, nil
}
