package provision

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/pkg/apis"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/metrics"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

// unavailablePool is a NodePool left out of plans: its node class is not ready, or a permanent
// launch failure holds it back (cloud.LaunchBackoff). Replanning cannot change either, so the
// provisioner neither fails nor retries for it; it tells the pods the pool would have served.
type unavailablePool struct {
	pool *karpv1.NodePool
	// class is "<Kind> \"<name>\"" of the pool's node class.
	class           string
	reason, message string
	// cause is what a pod is told once: a new cause is told again, a repeat is not (the
	// message also says until when a hold lasts, which moves with every failure).
	cause string
}

// heldBack returns why np may not launch now after a permanent launch failure, or nil.
func (p *Provisioner) heldBack(np *karpv1.NodePool) *unavailablePool {
	class := ""
	if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil {
		class = ref.Name
	}
	until, msg, held := p.opts.Backoff.Held(np.Name, class)
	if !held {
		return nil
	}
	return &unavailablePool{pool: np, class: nodeClassName(np), reason: "LaunchFailed", cause: "LaunchFailed: " + msg,
		message: fmt.Sprintf("launches are held back for %s (until %s) after one failed for a reason retrying cannot fix: %s",
			until.Sub(p.opts.Clock.Now()).Round(time.Second), until.UTC().Format(time.RFC3339), msg)}
}

// notReadyPool turns an InstanceTypes error into an unavailable pool when the node class is not
// ready; other errors are the cloud's and are retried.
func notReadyPool(np *karpv1.NodePool, err error) *unavailablePool {
	nr := cloud.AsNodeClassNotReady(err)
	if nr == nil {
		return nil
	}
	msg := fmt.Sprintf("%s %q is not ready: %s", nr.Kind, nr.Name, nr.Message)
	return &unavailablePool{pool: np, class: fmt.Sprintf("%s %q", nr.Kind, nr.Name), reason: nr.Reason, message: msg, cause: nr.Reason + ": " + msg}
}

func nodeClassName(np *karpv1.NodePool) string {
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil {
		return "no node class"
	}
	return fmt.Sprintf("%s %q", ref.Kind, ref.Name)
}

// tellUnavailable gives each unplaceable pod one FailedProvisioning Event per unavailable pool
// that would have served it, naming the pool, its node class and the reason; the same reason is
// not told twice, however many plans run while it lasts. It returns the pods it told about some
// pool (now or before). unbound are the pods not yet bound: what others were told is forgotten.
func (p *Provisioner) tellUnavailable(unplaceable []planner.Unplaceable, unavailable []unavailablePool, unbound map[types.UID]bool) map[types.UID]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for uid := range p.told {
		if !unbound[uid] {
			delete(p.told, uid)
		}
	}
	told := map[types.UID]bool{}
	for _, u := range unplaceable {
		for _, up := range unavailable {
			if !mayServe(u.Pod, up.pool) {
				continue
			}
			told[u.Pod.UID] = true
			if p.told[u.Pod.UID] == nil {
				p.told[u.Pod.UID] = map[string]string{}
			}
			if p.told[u.Pod.UID][up.pool.Name] == up.cause {
				continue
			}
			p.told[u.Pod.UID][up.pool.Name] = up.cause
			metrics.PodsToldUnavailable.WithLabelValues(up.pool.Name, up.reason).Inc()
			p.opts.Recorder.Eventf(u.Pod, apis.ForEvents(up.pool), corev1.EventTypeWarning, "FailedProvisioning", "Provisioning",
				"NodePool %q (%s) cannot launch: %s: %s", up.pool.Name, up.class, up.reason, up.message)
		}
	}
	return told
}

// mayServe reports whether np could hold pod if it could launch: the pod tolerates the pool's
// taints and its node selector does not contradict the pool's labels or requirements. It only
// decides whom to tell about a pool that cannot launch; fit itself is the Filters' question.
func mayServe(pod *corev1.Pod, np *karpv1.NodePool) bool {
	t := np.Spec.Template
	if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), t.Spec.Taints, pod.Spec.Tolerations,
		func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, true); untolerated {
		return false
	}
	for k, v := range pod.Spec.NodeSelector {
		if k == karpv1.NodePoolLabelKey && v != np.Name {
			return false
		}
		if have, ok := t.Labels[k]; ok && have != v {
			return false
		}
		for _, r := range t.Spec.Requirements {
			if r.Key == k && r.Operator == corev1.NodeSelectorOpIn && !contains(r.Values, v) {
				return false
			}
		}
	}
	return true
}

func contains(values []string, v string) bool {
	for _, x := range values {
		if x == v {
			return true
		}
	}
	return false
}
