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
)

// A plan that puts a pod where the scheduler will not take it launches a node for nothing, and
// the next plan, made the same way, launches another: harness seed 1708 launched 157 NodeClaims
// in 90 s for three pods before its cause was found (preferences.go, narrowsSpread). Whatever the
// next such cause is, it must cost a few nodes and say so, not a fleet.
//
// So a pod is refused on a node launched for it when a plan launches another node for it while
// one launched for it before has initialized: the scheduler has had that node and not placed the
// pod. After refusalLimit such nodes, plans leave the pod out for refusalBackoff, doubling on
// each trip up to maxRefusalBackoff, and the pod gets a FailedProvisioning Event that names the
// nodes and what the scheduler's Filter plugins answer on the last. The scheduler keeps trying
// the pod meanwhile, on every node there is; only new capacity waits. A pod that binds is
// forgotten.
const (
	refusalLimit      = 2
	refusalBackoff    = time.Minute
	maxRefusalBackoff = 10 * time.Minute
)

// refusals is what the provisioner knows of one pending pod's launched nodes.
type refusals struct {
	// launched are the NodeClaims created for the pod and not yet found refused.
	launched []string
	// refusedOn are the nodes of launched claims found initialized when another was created.
	refusedOn []string
	// trips counts the backoffs so far; until ends the current one.
	trips int
	until time.Time
}

// noteLaunched records that claim was created for pods, and finds which of the claims created
// for them before have initialized: the scheduler refused each pod there. It returns the pods
// that reached refusalLimit, now backed off. Call it with p.mu held.
func (p *Provisioner) noteLaunched(claim string, pods []*corev1.Pod, claims map[string]*karpv1.NodeClaim) []*corev1.Pod {
	var tripped []*corev1.Pod
	for _, pod := range pods {
		r := p.refusals[pod.UID]
		if r == nil {
			r = &refusals{}
			p.refusals[pod.UID] = r
		}
		kept := r.launched[:0]
		for _, name := range r.launched {
			if c := claims[name]; c != nil && c.Status.NodeName != "" && c.IsTrue(karpv1.ConditionTypeInitialized) {
				r.refusedOn = append(r.refusedOn, c.Status.NodeName)
				continue
			}
			kept = append(kept, name)
		}
		r.launched = append(kept, claim)
		if len(r.refusedOn) >= refusalLimit {
			r.until = p.opts.Clock.Now().Add(min(refusalBackoff<<r.trips, maxRefusalBackoff))
			r.trips++
			tripped = append(tripped, pod)
		}
	}
	return tripped
}

// backedOff reports whether plans leave pod out for now.
func (p *Provisioner) backedOff(pod *corev1.Pod) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.refusals[pod.UID]
	return r != nil && p.opts.Clock.Now().Before(r.until)
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
	var view *schedulerView
	if sim != nil {
		p.checking.Lock()
		defer p.checking.Unlock()
		view = newSchedulerView(sim, nodes, pods, claims, assumed, p.opts.SchedulerName)
	}
	for i, pod := range tripped {
		last := what[i].on[len(what[i].on)-1]
		answer := "the node is gone"
		if view != nil {
			if status := view.admits(ctx, view.preFilter(ctx, pod), pod, last); status != nil {
				answer = fmt.Sprintf("%s: %s", status.Plugin(), status.Message())
			} else {
				answer = "they accept it now"
			}
		}
		wait := what[i].until.Sub(p.opts.Clock.Now()).Round(time.Second)
		metrics.PodsRefusedBackoff.Inc()
		klog.FromContext(ctx).Info("The scheduler refused a pod on the nodes launched for it; launching no more for it for a while",
			"pod", klog.KObj(pod), "nodes", what[i].on, "filter", answer, "backoff", wait)
		p.opts.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, "FailedProvisioning", "Provisioning",
			"The scheduler did not place the pod on the %d nodes launched for it (%s); on %s the Filter plugins say %s. No node is launched for it for %s",
			len(what[i].on), strings.Join(what[i].on, ", "), last, answer, wait)
	}
}
