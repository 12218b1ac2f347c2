package harness

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
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
