package provision

import (
	"context"
	"encoding/json"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
	"github.com/tailor-sh/tailor/pkg/provision/schedulerview"
)

// nominateWorkers bounds the nomination patches in flight at once.
const nominateWorkers = 8

// Launched says that a NodeClaim's node name became known: the pods planned onto it are
// nominated to it at once, not after the next plan, so that the nominations are in before its node
// comes up and the scheduler binds pods there by its own scoring.
func (p *Provisioner) Launched() {
	p.mu.Lock()
	ctx := p.runCtx
	p.mu.Unlock()
	if ctx != nil {
		p.nominateSoon(ctx)
	}
}

// NominatedNode returns the node PostFilter may nominate pod to: the node of the NodeClaim
// planned for it, once the cloud has said what it will be, and only when the last nomination pass
// found that the scheduler will take the pod there beside the other nominations (see nominate).
// Once the claim has initialized, the pod keeps that node while it is still on its way there
// (PlannedNode): PostFilter's answer is final for the cycle, and with none the scheduler's own
// preemption clears the pod's nomination, which would open the room kept for it to other pods
// just as its node is ready.
func (p *Provisioner) NominatedNode(pod *corev1.Pod) (string, bool) {
	node, ok := p.PlannedNode(pod)
	if !ok {
		return "", false
	}
	p.mu.Lock()
	admitted := p.admitted[pod.UID] == node
	p.mu.Unlock()
	return node, admitted
}

// claimNode returns the node name of the NodeClaim planned for pod, once the cloud has said what
// it will be.
func (p *Provisioner) claimNode(pod *corev1.Pod) (string, bool) {
	claim, ok := p.namedClaim(pod)
	if !ok {
		return "", false
	}
	return claim.Status.NodeName, true
}

// namedClaim returns the NodeClaim planned for pod, once the cloud has named its node, unless
// it is going away.
func (p *Provisioner) namedClaim(pod *corev1.Pod) (*karpv1.NodeClaim, bool) {
	claim, ok := p.plannedClaim(pod)
	if !ok || claim.Status.NodeName == "" {
		return nil, false
	}
	return claim, true
}

// plannedClaim returns the NodeClaim planned for pod, named or not, unless it is going away.
func (p *Provisioner) plannedClaim(pod *corev1.Pod) (*karpv1.NodeClaim, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.plannedClaimLocked(pod)
}

// plannedClaimLocked is plannedClaim with p.mu held.
func (p *Provisioner) plannedClaimLocked(pod *corev1.Pod) (*karpv1.NodeClaim, bool) {
	claimName, ok := p.planned[pod.UID]
	if !ok {
		return nil, false
	}
	return p.liveClaim(claimName)
}

// liveClaim returns the NodeClaim named name from the informer's cache, or as this process
// created it a moment ago when the cache has not caught up, unless it is going away. Call it
// with p.mu held.
func (p *Provisioner) liveClaim(name string) (*karpv1.NodeClaim, bool) {
	claim, err := p.opts.ClaimLister.Get(name)
	if apierrors.IsNotFound(err) {
		created, ok := p.created[name]
		if !ok {
			return nil, false
		}
		claim, err = created.claim, nil
	}
	if err != nil || claim.DeletionTimestamp != nil {
		return nil, false
	}
	return claim, true
}

// PlannedNode returns the node a plan put pod on while the pod is on its way there: the node of
// the NodeClaim it was planned onto, once the cloud has named it, until NominationWindow after
// the claim initialized. Pods a plan left to existing nodes have none: the scheduler weighs
// those by its own scores, preferences included, as it would without Tailor.
func (p *Provisioner) PlannedNode(pod *corev1.Pod) (string, bool) {
	if node, ok := p.claimNode(pod); ok {
		return node, true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.destined[pod.UID]
	if !ok || p.opts.Clock.Now().After(d.until) {
		return "", false
	}
	return d.node, true
}

// nominateSoon runs nominate in the background, one pass at a time: a burst has a nomination to
// write per pod, a round trip each, and planning must not wait for them. A call that comes while
// a pass runs asks for one more pass after it, over the cluster as it is then.
func (p *Provisioner) nominateSoon(ctx context.Context) {
	p.mu.Lock()
	if p.nominating {
		p.nominateAgain = true
		p.mu.Unlock()
		return
	}
	p.nominating = true
	p.mu.Unlock()
	go func() {
		for {
			nodes, err := p.opts.Nodes.List(labels.Everything())
			pods, err2 := p.opts.Pods.List(labels.Everything())
			claims, err3 := p.opts.ClaimLister.List(labels.Everything())
			if err == nil && err2 == nil && err3 == nil {
				p.nominate(ctx, nodes, pods, claims)
			}
			p.mu.Lock()
			again := p.nominateAgain && ctx.Err() == nil
			p.nominateAgain = false
			p.nominating = again
			p.mu.Unlock()
			if !again {
				return
			}
		}
	}()
}

// nominate keeps status.nominatedNodeName (KEP-5278) in step with the plans: a pod planned onto a
// launching NodeClaim whose node name is known is nominated to that node, so the scheduler keeps
// its room against pods of equal or lower priority; a pod nominated to a node that will never
// come (its claim is gone) has the nomination cleared, so it is planned and scheduled afresh.
// Only nominations to names that are neither a Node nor a live claim's node are cleared: the
// scheduler's own nominations always name existing nodes.
//
// A pod is nominated only where the scheduler will take it with the other nominations standing
// (see schedulerview.Admissible): a plan puts three pods of a zone-spread Deployment on each of
// three new nodes, but the scheduler counts a node's nominated pods in that node's zone alone,
// and would refuse every one of them there while the others wait. The pods left out stay planned
// onto their claim, and are nominated once the pods ahead of them have bound.
func (p *Provisioner) nominate(ctx context.Context, nodes []*corev1.Node, pods []*corev1.Pod, claims []*karpv1.NodeClaim) {
	target := map[string]string{} // claim name -> node name, for claims still launching
	futureNodes := map[string]bool{}
	for _, c := range claims {
		if c.DeletionTimestamp == nil && c.Status.NodeName != "" {
			futureNodes[c.Status.NodeName] = true
			if !c.IsTrue(karpv1.ConditionTypeInitialized) {
				target[c.Name] = c.Status.NodeName
			}
		}
	}
	for _, n := range nodes {
		futureNodes[n.Name] = true
	}
	type change struct {
		pod  *corev1.Pod
		node string
	}
	var changes []change
	var wanted []schedulerview.Nomination
	p.mu.Lock()
	for _, pod := range pods {
		if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
			continue
		}
		want, has := target[p.planned[pod.UID]], pod.Status.NominatedNodeName
		switch {
		case want != "" && has == want:
			// Written by us, or by the scheduler from what PostFilter answered: ours either way.
			p.nominations[pod.UID] = want
			wanted = append(wanted, schedulerview.Nomination{Pod: pod, Node: want})
		case want != "" && (has == "" || p.nominations[pod.UID] == has):
			// Only an empty nomination or one of ours is replaced: one of the scheduler's
			// (preemption under way) is its to keep.
			wanted = append(wanted, schedulerview.Nomination{Pod: pod, Node: want})
		case want == "" && has != "" && !futureNodes[has]:
			changes = append(changes, change{pod, ""})
		}
	}
	assumed := maps.Clone(p.assumed)
	sim := p.checker
	p.mu.Unlock()
	var admitted map[types.UID]bool
	// No pod waits for a launching node (every pending pod fits an existing one, the common case):
	// nothing to weigh, and the view, a snapshot of the whole cluster, is not built.
	if sim != nil && len(wanted) > 0 {
		p.checking.Lock()
		view := schedulerview.New(sim, nodes, pods, claims, assumed, p.opts.SchedulerName)
		admitted = schedulerview.Admissible(ctx, view, wanted)
		p.checking.Unlock()
	}
	p.mu.Lock()
	for _, w := range wanted {
		p.headFor(w.Pod, w.Node)
		if admitted == nil || admitted[w.Pod.UID] {
			p.admitted[w.Pod.UID] = w.Node
		} else {
			delete(p.admitted, w.Pod.UID)
		}
	}
	p.mu.Unlock()
	for _, w := range wanted {
		has := w.Pod.Status.NominatedNodeName
		switch ok := admitted == nil || admitted[w.Pod.UID]; {
		case ok && has != w.Node:
			changes = append(changes, change{w.Pod, w.Node})
		case !ok && has != "":
			changes = append(changes, change{w.Pod, ""})
		}
	}
	workqueue.ParallelizeUntil(ctx, nominateWorkers, len(changes), func(i int) {
		p.setNomination(ctx, changes[i].pod, changes[i].node)
	})
}

func (p *Provisioner) setNomination(ctx context.Context, pod *corev1.Pod, node string) {
	var value any = node
	if node == "" {
		value = nil
	}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"nominatedNodeName": value}})
	_, err := p.opts.Kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err == nil {
		p.mu.Lock()
		if node != "" {
			p.nominations[pod.UID] = node
		} else {
			delete(p.nominations, pod.UID)
		}
		p.mu.Unlock()
	}
	logger := klog.FromContext(ctx)
	switch {
	case err == nil && node != "":
		logger.V(2).Info("Nominated pod to a launching node", "pod", klog.KObj(pod), "node", node)
	case err == nil:
		logger.V(2).Info("Cleared a nomination Tailor wrote", "pod", klog.KObj(pod), "node", pod.Status.NominatedNodeName)
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsInvalid(err):
		// Gone, or bound since the informers were read: the API server refuses a nomination
		// on a bound pod. Nothing to do either way.
	default:
		logger.Error(err, "Updating the pod's nominated node", "pod", klog.KObj(pod), "node", node)
	}
}

// clearStaleNominations clears the nominations this process wrote for pods a plan has just found
// no place for, in the background. Once a pod's NodeClaim initializes, nominate leaves the
// nomination to its node alone (the scheduler tries that node first), and nothing else takes it
// back: a pod that no node can hold (a Job's pod its spread refuses everywhere, say) would stay
// nominated to a Ready node it does not fit, telling its readers it is on its way there. What would
// give the node back through PostFilter (the destination, the admission, the heading) goes too,
// for every pod no plan places, nominated or not;
// and the patch applies only if the nomination is still the one read before the plan, so a
// nomination the scheduler's preemption wrote since stays.
func (p *Provisioner) clearStaleNominations(ctx context.Context, unplaceable []planner.Unplaceable) {
	pods := make([]*corev1.Pod, len(unplaceable))
	for i, u := range unplaceable {
		pods[i] = u.Pod
	}
	p.dropNominations(ctx, pods)
}

// dropNominations forgets where the pods were headed and clears, in the background, the
// nominations Tailor wrote for them.
func (p *Provisioner) dropNominations(ctx context.Context, pods []*corev1.Pod) {
	var stale []*corev1.Pod
	p.mu.Lock()
	for _, pod := range pods {
		if p.ownNomination(pod) {
			stale = append(stale, pod)
		}
		// Headed nowhere now: a pod an earlier plan left to a node whose room a sibling then
		// took, and that no plan places since (a NodePool at its limit), is not stranded there.
		p.forgetDestination(pod.UID)
	}
	p.mu.Unlock()
	if len(stale) == 0 {
		return
	}
	go workqueue.ParallelizeUntil(ctx, nominateWorkers, len(stale), func(i int) {
		p.clearNomination(ctx, stale[i])
	})
}

// ownNomination reports whether pod carries a nomination this process wrote; call it with p.mu
// held.
func (p *Provisioner) ownNomination(pod *corev1.Pod) bool {
	has := pod.Status.NominatedNodeName
	return has != "" && p.nominations[pod.UID] == has
}

// forgetDestination drops what would send the pod to the node a plan put it on: the heading the
// stranded watch follows, and the destination and admission PostFilter hands the scheduler. Call
// it with p.mu held.
func (p *Provisioner) forgetDestination(uid types.UID) {
	delete(p.headed, uid)
	delete(p.destined, uid)
	delete(p.admitted, uid)
}

// clearNomination removes pod's nomination if it is still the one pod carries.
func (p *Provisioner) clearNomination(ctx context.Context, pod *corev1.Pod) {
	has := pod.Status.NominatedNodeName
	patch, _ := json.Marshal([]map[string]any{
		{"op": "test", "path": "/status/nominatedNodeName", "value": has},
		{"op": "remove", "path": "/status/nominatedNodeName"},
	})
	_, err := p.opts.Kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.JSONPatchType, patch, metav1.PatchOptions{}, "status")
	switch {
	case err == nil:
		p.mu.Lock()
		if p.nominations[pod.UID] == has {
			delete(p.nominations, pod.UID)
		}
		p.mu.Unlock()
		klog.FromContext(ctx).V(2).Info("Cleared a nomination Tailor wrote for a pod no plan places", "pod", klog.KObj(pod), "node", has)
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		// Gone, bound, or nominated anew since the plan read it: not ours to clear.
	default:
		klog.FromContext(ctx).Error(err, "Clearing a pod's nomination", "pod", klog.KObj(pod), "node", has)
	}
}

// scheduledByNomination reports whether the scheduler will place pod by its nomination: it is
// nominated to an existing node by the scheduler's preemption, not by a plan of ours. The
// scheduler hands such a pod to PostFilter while its victims terminate, so being handed over
// says nothing. One that Tailor nominated is planned again: its plan may have gone stale. (A
// process that restarts forgets which nominations were its own, and leaves those pods to the
// scheduler.)
func (p *Provisioner) scheduledByNomination(pod *corev1.Pod, nodes map[string]bool, inFlight map[string]string) bool {
	nominated := pod.Status.NominatedNodeName
	if nominated == "" || inFlight[nominated] != "" || !nodes[nominated] {
		return false
	}
	p.mu.Lock()
	ours := p.nominations[pod.UID] == nominated
	p.mu.Unlock()
	return !ours
}

// destinations are the nodes pending pods are on their way to: the node they are nominated to,
// or else the one an earlier plan counted them on, or else the one room is booked on for them
// (Options.Destined).
func (p *Provisioner) destinations(pending []*corev1.Pod) map[types.UID]string {
	var kept map[types.UID]string
	if p.opts.Destined != nil {
		kept = p.opts.Destined(pending) // outside the lock: it lists pods itself
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.opts.Clock.Now()
	out := map[types.UID]string{}
	for _, pod := range pending {
		if n := pod.Status.NominatedNodeName; n != "" {
			out[pod.UID] = n
		} else if d, ok := p.destined[pod.UID]; ok && !now.After(d.until) {
			out[pod.UID] = d.node
		} else if n, ok := kept[pod.UID]; ok {
			out[pod.UID] = n
		}
	}
	return out
}
