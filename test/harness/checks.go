package harness

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/disruption"
	"github.com/tailor-sh/tailor/pkg/lifecycle/expiration"
	"github.com/tailor-sh/tailor/pkg/lifecycle/interruption"
	"github.com/tailor-sh/tailor/pkg/lifecycle/repair"
)

// Finding is one broken invariant.
type Finding struct {
	// Check names the invariant, e.g. "stranded" or "unused-node".
	Check  string
	Object string
	Detail string
}

func (f Finding) String() string { return fmt.Sprintf("%s: %s: %s", f.Check, f.Object, f.Detail) }

// Source finds pods left beside capacity, from one kind of evidence.
type Source func(ctx context.Context, r *Reading, f *Fitter) []Finding

// StrandedSources are every way of telling a stranded pod; adding one (the sandbox report's
// stranded list, say) is one more line here.
var StrandedSources = []Source{nominatedToReadyNode, fitsExistingNode, tailorSaid}

// tailorSaid: Tailor's own Stranded and Unused Events (the sandbox report's stranded and
// unusedNodes), over the whole run so far: a pod it had to plan again counts even if it runs now.
func tailorSaid(_ context.Context, r *Reading, _ *Fitter) []Finding {
	var out []Finding
	for _, f := range r.Stranded {
		out = append(out, Finding{"stranded", f.Name, "Tailor: " + f.Message})
	}
	for _, f := range r.Unused {
		out = append(out, Finding{"unused-node", f.Name, "Tailor: " + f.Message})
	}
	return out
}

// nominatedToReadyNode: a pending pod whose nominated node exists and is Ready was promised room
// the scheduler did not give it.
func nominatedToReadyNode(_ context.Context, r *Reading, _ *Fitter) []Finding {
	var out []Finding
	for _, p := range r.Pending() {
		if name := p.Status.NominatedNodeName; name != "" {
			if n := r.node(name); n != nil && ready(n) && n.DeletionTimestamp == nil {
				out = append(out, Finding{"stranded", key(p), fmt.Sprintf("pending, nominated to Ready node %s; %s", name, schedulingMessage(p))})
			}
		}
	}
	return out
}

// fitsExistingNode: the Filter plugins accept a pending pod on a node that exists now.
func fitsExistingNode(ctx context.Context, r *Reading, f *Fitter) []Finding {
	var out []Finding
	for _, p := range r.Pending() {
		if name := f.FitsExisting(ctx, r, p); name != "" {
			out = append(out, Finding{"stranded", key(p), fmt.Sprintf("pending, but Filter accepts it on existing node %s; %s", name, schedulingMessage(p))})
		}
	}
	return out
}

// Check runs every invariant of a settled cluster.
func Check(ctx context.Context, r *Reading, f *Fitter) []Finding {
	var out []Finding
	for _, p := range r.Pods {
		if p.Status.Phase == corev1.PodFailed {
			out = append(out, Finding{"pod-failed", key(&p), p.Status.Reason + " " + p.Status.Message})
		}
	}
	for _, p := range r.Pending() {
		if _, ok := r.Explained[key(p)]; !ok {
			out = append(out, Finding{"unexplained", key(p), "pending with no FailedProvisioning event; " + schedulingMessage(p)})
		}
		if fits := f.FitsNew(ctx, r, p); len(fits) > 0 {
			out = append(out, Finding{"pending-but-fits", key(p), fmt.Sprintf("pending, but Filter accepts it on a new node of %s; Tailor said %q; %s",
				strings.Join(fits, ", "), r.Explained[key(p)], schedulingMessage(p))})
		}
	}
	for _, src := range StrandedSources {
		out = append(out, src(ctx, r, f)...)
	}
	out = append(out, unusedNodes(r)...)
	return out
}

// unusedNodes: a node Tailor launched and that is initialized, with no pod of a workload on it.
func unusedNodes(r *Reading) []Finding {
	var out []Finding
	used := r.workloadPods()
	for name, claim := range r.launched() {
		n := r.node(name)
		if n == nil || n.DeletionTimestamp != nil || claim.DeletionTimestamp != nil || !claim.IsTrue(karpv1.ConditionTypeInitialized) {
			continue
		}
		if used[name] == 0 {
			out = append(out, Finding{"unused-node", name, fmt.Sprintf("launched for NodeClaim %s (%s), initialized, no workload pod on it",
				claim.Name, n.Labels[corev1.LabelInstanceTypeStable])})
		}
	}
	return out
}

// schedulingMessage is the scheduler's last word on a pod: the PodScheduled condition's message.
func schedulingMessage(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return "scheduler: " + c.Message
		}
	}
	return "no scheduler message"
}

// disruptionEvents are the reasons of the Events Tailor writes on a Node when it starts to
// remove it, by every method: the disruption loop's (emptiness, drift, consolidation), expiration,
// repair and each kind of interruption notice.
var disruptionEvents = map[string]bool{
	disruption.ReasonTerminating: true, expiration.Method: true, repair.Method: true, interruption.TerminatingOnInterruption: true,
	interruption.EventReason(cloud.InterruptionSpot): true, interruption.EventReason(cloud.InterruptionRebalance): true,
	interruption.EventReason(cloud.InterruptionScheduledChange): true, interruption.EventReason(cloud.InterruptionStopping): true,
	interruption.EventReason(cloud.InterruptionTerminating): true, interruption.EventReason(cloud.InterruptionCapacityReservation): true,
}

// Disruptions says how the pods of removed nodes left: each evicted (or deleted past its
// node's grace period) pod's Event, and each node's disruption Event, by name.
type Disruptions struct {
	Pods  map[string]string // namespace/name -> the Evicted or Disrupted Event's note
	Nodes map[string]string // node -> "reason: note" of its disruption Event
}

// ReadDisruptions reads them from the Events there are now.
func ReadDisruptions(ctx context.Context, kube kubernetes.Interface) (*Disruptions, error) {
	events, err := kube.EventsV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Events to tell how pods left their nodes: %w", err)
	}
	d := &Disruptions{Pods: map[string]string{}, Nodes: map[string]string{}}
	for _, ev := range events.Items {
		switch {
		case ev.Regarding.Kind == "Pod" && (ev.Reason == "Evicted" || ev.Reason == "Disrupted"):
			d.Pods[ev.Regarding.Namespace+"/"+ev.Regarding.Name] = ev.Note
		case ev.Regarding.Kind == "Node" && disruptionEvents[ev.Reason]:
			d.Nodes[ev.Regarding.Name] = ev.Reason + ": " + ev.Note
		}
	}
	return d, nil
}

// RanThenPending: a pod that ran before a disruption and is Pending after it, whatever method
// removed its node. A disruption must never evict a pod into nowhere. A StatefulSet's pod (or a
// pod of no set) is itself after eviction, under its name. Pods of one ReplicaSet or Job are
// interchangeable: when a move gives the room of an evicted one to a sibling that waited all
// along, no more of them wait than before, and none is counted; each one more that waits is.
func RanThenPending(before, after *Reading, d *Disruptions) []Finding {
	ran, wasPending, pendingBefore := map[string]bool{}, map[string]bool{}, map[string]int{}
	ranInSet := map[string]bool{}
	for i := range before.Pods {
		p := &before.Pods[i]
		if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" {
			ran[key(p)] = true
			ranInSet[replicaSetOf(p)] = true
		}
	}
	for _, p := range before.Pending() {
		wasPending[key(p)] = true
		pendingBefore[replicaSetOf(p)]++
	}
	var out []Finding
	for _, p := range newlyPending(after.Pending(), wasPending, pendingBefore) {
		set := replicaSetOf(p)
		if (set == "" && !ran[key(p)]) || (set != "" && !ranInSet[set]) {
			continue // it never ran: not the disruption's doing
		}
		out = append(out, Finding{"ran-then-pending", key(p), fmt.Sprintf("ran before the disruption, pending after it%s; %s",
			howItLeft(p, before, d), schedulingMessage(p))})
	}
	return out
}

// howItLeft names the node the pod (or, in a set, a sibling) was evicted from and why that node
// went, as far as the Events tell.
func howItLeft(p *corev1.Pod, before *Reading, d *Disruptions) string {
	if d == nil {
		return ""
	}
	set := replicaSetOf(p)
	for i := range before.Pods {
		q := &before.Pods[i]
		if key(q) != key(p) && (set == "" || replicaSetOf(q) != set) {
			continue
		}
		note, ok := d.Pods[key(q)]
		if !ok {
			continue
		}
		s := fmt.Sprintf(" (%s: %s", key(q), note)
		if why, ok := d.Nodes[q.Spec.NodeName]; ok {
			s += "; node " + q.Spec.NodeName + " " + why
		}
		return s + ")"
	}
	return ""
}

// newlyPending are the pods pending now that were not before; pods of one ReplicaSet or Job
// count only beyond as many of the set as waited before (see RanThenPending).
func newlyPending(pending []*corev1.Pod, wasPending map[string]bool, pendingBefore map[string]int) []*corev1.Pod {
	now := map[string]int{}
	for _, p := range pending {
		now[replicaSetOf(p)]++
	}
	var out []*corev1.Pod
	for _, p := range pending {
		if set := replicaSetOf(p); !wasPending[key(p)] && (set == "" || now[set] > pendingBefore[set]) {
			out = append(out, p)
		}
	}
	return out
}

// replicaSetOf names the ReplicaSet or Job that owns pod, or "" for pods that are each their own.
func replicaSetOf(pod *corev1.Pod) string {
	for _, o := range pod.OwnerReferences {
		if o.Controller != nil && *o.Controller && (o.Kind == "ReplicaSet" || o.Kind == "Job") {
			return o.Kind + "/" + o.Name
		}
	}
	return ""
}
