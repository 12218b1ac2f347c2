package provision

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/metrics"
	"github.com/tailor-sh/tailor/pkg/provision/schedulerview"
)

// A plan that puts a pod where the scheduler will not take it launches a node for nothing, and
// the next plan, made the same way, launches another: one such cause (preferences.go) launched
// 157 NodeClaims in 90 s for three pods before it was found. Whatever the next such
// cause is, it must cost a few nodes and say so, not a fleet.
//
// So a node launched for a pod refuses it when a scheduling cycle had that node up (labelled
// initialized, in the cycle's snapshot) and found no place for the pod there (PostFilter, see
// Rejected): the scheduler has had the node and not placed the pod there. The refusal is counted
// when the scheduler next tries the pod, which the node coming up or the pod being woken brings
// about; a pod merely still pending beside its node is not refused: after a burst the scheduler
// takes seconds to come back to every pod, and counting those as refusals backed pods off for a
// minute in the burst benchmark while they needed one more node. A node that is leaving (its
// claim deleted, the node cordoned or tainted for disruption) is no refusal either: the pod is
// planned again for a reason of its own, and neither is a node Tailor's own Filter turned the pod
// away from to hold it for another. After refusalLimit refusals, plans
// leave the pod out for refusalBackoff, doubling on each trip up to maxRefusalBackoff, and the pod
// gets a FailedProvisioning Event that names the nodes and what the scheduler's Filter plugins
// answer on the last. The scheduler keeps trying the pod meanwhile, on every node there is; only
// new capacity waits. A pod that binds is forgotten.
const (
	refusalLimit      = 2
	refusalBackoff    = time.Minute
	maxRefusalBackoff = 10 * time.Minute
)

// refusals is what the provisioner knows of one pending pod's launched nodes.
type refusals struct {
	// launched are the NodeClaims created for the pod and not yet found refused or gone.
	launched []string
	// refusedOn are the nodes of launched claims that refused the pod (see Rejected).
	refusedOn []string
	// trips counts the backoffs so far; until ends the current one.
	trips int
	until time.Time
}

// backoff is how long plans leave a pod out on its trips-th trip (from 0).
func backoff(trips int) time.Duration {
	d := refusalBackoff
	for range trips {
		if d >= maxRefusalBackoff {
			break
		}
		d *= 2
	}
	return min(d, maxRefusalBackoff)
}

// noteLaunched records that claim was created for pods. Call it with p.mu held.
func (p *Provisioner) noteLaunched(claim string, pods []*corev1.Pod) {
	for _, pod := range pods {
		r := p.refusals[pod.UID]
		if r == nil {
			r = &refusals{}
			p.refusals[pod.UID] = r
		}
		r.launched = append(r.launched, claim)
	}
}

// leaving reports whether a node is on its way out, so that a pod not placed there was not
// refused by the scheduler for a fault of the plan.
func leaving(node *corev1.Node) bool {
	if node == nil || node.DeletionTimestamp != nil || node.Spec.Unschedulable {
		return true
	}
	for _, t := range node.Spec.Taints {
		if t.Key == karpv1.DisruptedTaintKey {
			return true
		}
	}
	return false
}

// Rejected counts, for a pod the scheduler found no node for, the nodes launched for it that
// the cycle refused it on while they were up (refusedOn returns them as the cycle saw them), as
// refusals (see above). It runs in PostFilter, on the scheduling goroutine: it reads the
// informers' caches and nothing else.
func (p *Provisioner) Rejected(pod *corev1.Pod, refusedOn func(node string) *corev1.Node) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cycleFailed(pod.UID)
	r := p.refusals[pod.UID]
	if r == nil || len(r.launched) == 0 {
		return
	}
	kept := r.launched[:0]
	for _, name := range r.launched {
		c, ok := p.liveClaim(name)
		if !ok {
			continue // gone or going: not the scheduler's refusal
		}
		var node *corev1.Node
		if c.Status.NodeName != "" {
			node = refusedOn(c.Status.NodeName)
		}
		switch {
		case node == nil || node.Labels[karpv1.NodeInitializedLabelKey] != "true":
			kept = append(kept, name)
		case !leaving(node):
			r.refusedOn = append(r.refusedOn, node.Name)
		}
	}
	r.launched = kept
}

// backedOff reports whether plans leave the pending pod out for now. It forgets the claims
// launched for the pod that are gone, and starts a backoff once the pod's refusals reach
// refusalLimit: the pod then joins tripped, to be told why.
func (p *Provisioner) backedOff(pod *corev1.Pod, claims map[string]*karpv1.NodeClaim, tripped *[]*corev1.Pod) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.refusals[pod.UID]
	if r == nil {
		return false
	}
	now := p.opts.Clock.Now()
	if now.Before(r.until) {
		return true
	}
	kept := r.launched[:0]
	for _, name := range r.launched {
		if c := claims[name]; c != nil && c.DeletionTimestamp == nil {
			kept = append(kept, name)
		}
	}
	r.launched = kept
	if len(r.refusedOn) < refusalLimit {
		return false
	}
	r.until = now.Add(backoff(r.trips))
	r.trips++
	*tripped = append(*tripped, pod)
	return true
}

// forgetRefusals drops what is kept of pods that are no longer unbound.
func (p *Provisioner) forgetRefusals(unbound map[types.UID]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for uid := range p.refusals {
		if !unbound[uid] {
			delete(p.refusals, uid)
		}
	}
}

// tellRefused gives each pod just backed off its Event, with the Filter plugins' answer on the
// last node it was refused on, as the scheduler asks them now.
func (p *Provisioner) tellRefused(ctx context.Context, tripped []*corev1.Pod, nodes []*corev1.Node, pods []*corev1.Pod, claims []*karpv1.NodeClaim) {
	if len(tripped) == 0 {
		return
	}
	p.mu.Lock()
	sim, assumed := p.checker, maps.Clone(p.assumed)
	type told struct {
		on    []string
		until time.Time
	}
	what := make([]told, len(tripped))
	for i, pod := range tripped {
		r := p.refusals[pod.UID]
		what[i] = told{on: r.refusedOn, until: r.until}
		r.refusedOn = nil
	}
	p.mu.Unlock()
	var view *schedulerview.View
	if sim != nil {
		p.checking.Lock()
		defer p.checking.Unlock()
		view = schedulerview.New(sim, nodes, pods, claims, assumed, p.opts.SchedulerName)
	}
	for i, pod := range tripped {
		last := what[i].on[len(what[i].on)-1]
		answer := "unknown"
		if view != nil {
			switch status := view.Admits(ctx, view.PreFilter(ctx, pod), pod, last); {
			case status == nil:
				answer = "they accept it now"
			case status.Plugin() == "":
				answer = status.Message()
			default:
				answer = fmt.Sprintf("%s: %s", status.Plugin(), status.Message())
			}
		}
		wait := what[i].until.Sub(p.opts.Clock.Now()).Round(time.Second)
		metrics.PodsRefusedBackoff.Inc()
		klog.FromContext(ctx).Info("The scheduler did not place a pod on the nodes launched for it; launching no more for it for a while",
			"pod", klog.KObj(pod), "nodes", what[i].on, "filter", answer, "backoff", wait)
		p.opts.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, "FailedProvisioning", "Provisioning",
			"The scheduler did not place the pod on the %d nodes launched for it (%s); on %s the Filter plugins answer %s. No node is launched for it for %s",
			len(what[i].on), strings.Join(what[i].on, ", "), last, answer, wait)
	}
}
