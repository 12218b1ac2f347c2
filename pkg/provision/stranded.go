package provision

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/pkg/apis"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/controller"
	"github.com/tailor-sh/tailor/pkg/metrics"
	"github.com/tailor-sh/tailor/pkg/provision/schedulerview"
	"github.com/tailor-sh/tailor/pkg/scheduling"
)

// DefaultStrandedAfter is Options.StrandedAfter when unset.
const DefaultStrandedAfter = 30 * time.Second

// wakeAfter is how long a pod may stay pending beside the node that came up for it before it is
// moved into the scheduler's active queue again (see wake), when that is before strandedAfter.
const wakeAfter = 5 * time.Second

// heading is the node a plan put a pending pod on, since when it has been headed there, and the
// pod's siblings (see siblingsOf), which may take its room there.
type heading struct {
	node     string
	since    time.Time
	siblings types.UID
	// retried is when the pod, found pending strandedAfter beside node with the scheduler's
	// Filter plugins accepting it there, was handed back to the scheduler instead of planned
	// again (see replanStranded); zero if it was not.
	retried time.Time
	// failed is when a scheduling cycle for the pod last failed after it was handed back: no
	// node fit (PostFilter, Rejected), or it was let go past Filter (Unreserve).
	failed time.Time
	// placed is when a plan last put the pod on node: since, or a later plan that agreed.
	placed time.Time
	// refused is when a scheduling cycle for the pod last failed, handed back or not. Until one
	// fails after placed, the pod counts on node in the plans (see towardNodes).
	refused time.Time
}

// cycleFailed records that a scheduling cycle for a pod headed for a node has failed: from then
// on plans no longer count it there (refused, see towardNodes), and, for a pod handed back to the
// scheduler beside that node, it may be stranded (failed): until a cycle has failed, a pod the
// Filter plugins accept there is waiting its turn in the scheduler's queue (see retryAccepted).
// Called with p.mu held.
func (p *Provisioner) cycleFailed(uid types.UID) {
	h, ok := p.headed[uid]
	if !ok {
		return
	}
	h.refused = p.opts.Clock.Now()
	if !h.retried.IsZero() {
		h.failed = h.refused
	}
	p.headed[uid] = h
}

// towardNodes are the pending pods headed for a node that the scheduler has not refused since a
// plan last put them there, with the node: a plan counts each there, as the scheduler will place
// it, instead of placing it again. Without this, every pod whose NodeClaim had initialized was
// planned again in every round until it bound (it was on no claim in flight any more, and
// fitted its node): in a 10,000-pod scale-up on two cores that was each of 307 rounds, 116 s
// of planning, while the pods waited their turn in the scheduler's queue. A pod the scheduler
// refused is planned again at once, as before; one it never tries is found by the stranded
// watch. Call it with p.mu held.
func (p *Provisioner) towardNodes() map[types.UID]string {
	out := make(map[types.UID]string, len(p.headed))
	for uid, h := range p.headed {
		if h.toward() {
			out[uid] = h.node
		}
	}
	return out
}

// toward says whether the pod counts on its node: no scheduling cycle for it has failed since a
// plan last put it there.
func (h heading) toward() bool { return !h.refused.After(h.placed) }

// headFor records that a plan put pod on node; call it with p.mu held. The time it has been
// headed there (since, the stranded watch's clock) is kept while the node stays the same, so
// re-plans that agree do not reset it; but the pod counts there again (placed). A pod refused
// there and placed there again by the next plan used to stay refused, and every round planned it
// again, a round every two seconds for three pods in the 20,000-pod fleet.
func (p *Provisioner) headFor(pod *corev1.Pod, node string) {
	now := p.opts.Clock.Now()
	if h, ok := p.headed[pod.UID]; ok && h.node == node {
		h.placed = now
		p.headed[pod.UID] = h
		return
	}
	p.headed[pod.UID] = heading{node: node, since: now, placed: now, siblings: siblingsOf(pod)}
	p.keyOf(pod)
}

func (p *Provisioner) strandedAfter() time.Duration {
	if p.opts.StrandedAfter > 0 {
		return p.opts.StrandedAfter
	}
	return DefaultStrandedAfter
}

// strandedPod is a pending pod left beside the node a plan put it on.
type strandedPod struct {
	pod  *corev1.Pod
	node string
	up   time.Duration
	// answer is what the scheduler's Filter plugins say of the pod on node; accepted, whether
	// they take it there (replanStranded).
	answer   string
	accepted bool
}

// watchStranded looks for stranded pods and unused nodes until ctx ends, a few times per
// strandedAfter.
func (p *Provisioner) watchStranded(ctx context.Context) {
	every := min(max(p.strandedAfter()/3, time.Second), wakeAfter/2)
	controller.Every(ctx, p.opts.Clock, every, func() { p.checkStranded(ctx) })
}

// checkStranded finds the pods a plan put on a node that has been up for strandedAfter and that
// are still pending: Tailor's promise is that they bind within seconds, so each is reported (a
// Stranded Event with what the scheduler's Filter plugins answer there, the metrics), and planned
// again with its nomination cleared. It also counts the nodes this process launched that no pod
// has landed on strandedAfter after they initialized.
func (p *Provisioner) checkStranded(ctx context.Context) {
	if p.nothingToWatch() {
		p.lapsedOnly()
		return
	}
	nodes, err := p.opts.Nodes.List(labels.Everything())
	if err != nil {
		return
	}
	pods, err := p.opts.Pods.List(labels.Everything())
	if err != nil {
		return
	}
	claims, err := p.opts.ClaimLister.List(labels.Everything())
	if err != nil {
		return
	}
	now := p.opts.Clock.Now()
	ix := indexForStranded(nodes, pods, claims)
	p.mu.Lock()
	found, wake := p.findStranded(ix, now)
	awaited := p.awaitedByTheirPods(claims, ix.byUID)
	unneeded := p.unneededClaims(claims, ix.byUID, leavingNodes(nodes, claims), ix.busy, awaited, now)
	unused := p.unusedNodes(claims, ix.upSince, ix.busy, ix.onTheWay, awaited, now)
	lapsed := p.lapsedHolds(claims, now)
	p.mu.Unlock()
	p.giveBackClaims(ctx, unneeded)
	p.wake(ctx, wake)
	for _, claim := range lapsed {
		p.Released(claim)
	}
	for _, c := range unused {
		p.opts.Recorder.Eventf(apis.ForEvents(c), nil, corev1.EventTypeWarning, "Unused", "Provisioning",
			"Node %s initialized %s ago and no pod has landed on it", c.Status.NodeName, now.Sub(ix.upSince[c.Status.NodeName]).Round(time.Second))
		klog.FromContext(ctx).Info("Launched node unused", "nodeClaim", c.Name, "node", c.Status.NodeName)
	}
	// Asking the Filter plugins takes a snapshot of the whole cluster. The watch ticks every
	// wakeAfter/2 for the wake-ups, but a pod is stranded only strandedAfter after its node came
	// up, and one found now is found again at the next tick: the pods found are asked about
	// together, a few times per strandedAfter. In a 20,000-pod scale-up, where pods waited
	// minutes in the scheduler's queue, a snapshot per tick was 67 CPU-s.
	if len(found) > 0 && now.Sub(p.askedAt) >= p.strandedAfter()/3 {
		p.askedAt = now
		p.replanStranded(ctx, found, nodes, pods, claims)
	}
}

// nothingToWatch says whether no pod is headed anywhere and this process launched no NodeClaim
// that is still tracked: then no pod can be stranded and no node unused or unneeded, and the
// watch reads no pod (a backlog that fits the nodes costs it nothing).
func (p *Provisioner) nothingToWatch() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.headed)+len(p.woken)+len(p.stranded)+len(p.launchedHere) == 0
}

// lapsedOnly is checkStranded's part that reads NodeClaims alone: holds that lapsed on claims
// another leader launched.
func (p *Provisioner) lapsedOnly() {
	claims, err := p.opts.ClaimLister.List(labels.Everything())
	if err != nil {
		return
	}
	p.mu.Lock()
	lapsed := p.lapsedHolds(claims, p.opts.Clock.Now())
	p.mu.Unlock()
	for _, claim := range lapsed {
		p.Released(claim)
	}
}

// strandedIndex is what checkStranded reads of the cluster, by key.
type strandedIndex struct {
	nodeExists map[string]bool
	// upSince is when each node's NodeClaim initialized; ofClaim, the nodes of live NodeClaims.
	upSince map[string]time.Time
	ofClaim map[string]bool
	byUID   map[types.UID]*corev1.Pod
	// busy are the nodes with a pod of a workload on them (or, once findStranded ran, one on its way).
	busy map[string]bool
	// onTheWay are the nodes pending pods are headed to (findStranded).
	onTheWay map[string]bool
}

func indexForStranded(nodes []*corev1.Node, pods []*corev1.Pod, claims []*karpv1.NodeClaim) *strandedIndex {
	ix := &strandedIndex{nodeExists: make(map[string]bool, len(nodes)), upSince: map[string]time.Time{}, ofClaim: map[string]bool{},
		byUID: make(map[types.UID]*corev1.Pod, len(pods)), busy: map[string]bool{}, onTheWay: map[string]bool{}}
	for _, n := range nodes {
		ix.nodeExists[n.Name] = true
	}
	for _, c := range claims {
		if c.DeletionTimestamp == nil && c.Status.NodeName != "" {
			ix.ofClaim[c.Status.NodeName] = true
			if cond := c.GetCondition(karpv1.ConditionTypeInitialized); cond != nil && cond.Status == "True" {
				ix.upSince[c.Status.NodeName] = cond.LastTransitionTime.Time
			}
		}
	}
	for _, pod := range pods {
		ix.byUID[pod.UID] = pod
		if pod.Spec.NodeName != "" && !scheduling.IsDaemonSetPod(pod) {
			ix.busy[pod.Spec.NodeName] = true
		}
	}
	return ix
}

// findStranded returns the pods headed to a node that has been up for strandedAfter and still
// pending, and those to wake (pending wakeAfter, once per node), and keeps the count of stranded
// pods current. The nodes of stranded pods count as busy, and those pending pods are headed to as
// on their way. Called with p.mu held.
func (p *Provisioner) findStranded(ix *strandedIndex, now time.Time) (found []strandedPod, wake []*corev1.Pod) {
	after := p.strandedAfter()
	for uid := range p.woken {
		if _, ok := p.headed[uid]; !ok {
			delete(p.woken, uid)
		}
	}
	for uid, h := range p.headed {
		pod := ix.byUID[uid]
		if pod == nil || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || p.assumed[uid] != "" {
			continue
		}
		up := h.since
		if init, launched := ix.upSince[h.node]; launched && init.After(up) {
			up = init
		} else if !launched && ix.ofClaim[h.node] {
			continue // its NodeClaim has not initialized yet
		}
		if !ix.nodeExists[h.node] {
			continue
		}
		// A node a pending pod is on its way to is not unused: the pod may bind there yet.
		// Counting only the pods found stranded, the 4,000-pod fleet reported 211 to 311 nodes
		// Unused while their pods waited their turn in the scheduler's queue. (Busy is more: it
		// keeps a node its released gang's pods are still headed to, see unneededClaims.)
		ix.onTheWay[h.node] = true
		// A pod handed back to the scheduler gets another strandedAfter from then, and its node
		// counts as busy meanwhile.
		if !h.retried.IsZero() {
			ix.busy[h.node] = true
		}
		if waited := now.Sub(up); waited < after || now.Sub(h.retried) < after {
			if waited >= wakeAfter && p.woken[uid] != h.node {
				p.woken[uid] = h.node
				wake = append(wake, pod)
			}
			continue
		}
		found = append(found, strandedPod{pod: pod, node: h.node, up: now.Sub(up)})
		ix.busy[h.node] = true
	}
	for uid := range p.stranded {
		if pod := ix.byUID[uid]; pod == nil || pod.Spec.NodeName != "" {
			delete(p.stranded, uid)
		}
	}
	for _, s := range found {
		p.stranded[s.pod.UID] = true
	}
	metrics.PodsStranded.Set(float64(len(p.stranded)))
	return found, wake
}

// wake moves pods still pending wakeAfter after the node a plan put them on came up into the
// scheduler's active queue, once per node: the scheduler retries an unschedulable pod only when a
// queueing hint takes an event for it, and a wake-up that no event brings (the harness's
// 500-node storm test once had 8 pods that the scheduler had not tried 30 s after their nodes
// came up, with the Filter plugins accepting them there) must cost seconds, not strandedAfter.
// Each is counted and logged: a pod woken here is a wake-up some event should have brought.
func (p *Provisioner) wake(ctx context.Context, pods []*corev1.Pod) {
	if len(pods) == 0 || p.opts.Activate == nil {
		return
	}
	activate := make(map[string]*corev1.Pod, len(pods))
	for _, pod := range pods {
		activate[pod.Namespace+"/"+pod.Name] = pod
		klog.FromContext(ctx).V(2).Info("Woke a pod still pending beside the node that came up for it", "pod", klog.KObj(pod))
	}
	metrics.PodsWoken.Add(float64(len(pods)))
	p.opts.Activate(activate)
}

// unusedNodes returns the NodeClaims this process launched for pods whose nodes have been up for
// strandedAfter with no pod ever landed on them, newly found, and sets the gauge; a claim a pod it
// was launched for still waits for (awaited) is not unused. Call it with p.mu held.
func (p *Provisioner) unusedNodes(claims []*karpv1.NodeClaim, upSince map[string]time.Time, busy, onTheWay, awaited map[string]bool, now time.Time) []*karpv1.NodeClaim {
	var fresh []*karpv1.NodeClaim
	count := 0
	live := map[string]bool{}
	for _, c := range claims {
		live[c.Name] = true
		node := c.Status.NodeName
		init, up := upSince[node]
		if _, ours := p.launchedHere[c.Name]; !ours || !up || now.Sub(init) < p.strandedAfter() || busy[node] || onTheWay[node] || awaited[c.Name] || p.landed[node] > 0 ||
			c.DeletionTimestamp != nil || p.givenBack[c.Name] {
			continue
		}
		count++
		if !p.unused[c.Name] {
			p.unused[c.Name] = true
			metrics.NodesUnusedTotal.Inc()
			fresh = append(fresh, c)
		}
	}
	for name := range p.launchedHere {
		// A claim the informer has yet to show is still counted as created (see withCreated).
		if _, created := p.created[name]; !live[name] && !created && p.opts.Clock.Since(p.launchedHere[name]) > createdTTL {
			delete(p.launchedHere, name)
			delete(p.unused, name)
			delete(p.givenBack, name)
		}
	}
	metrics.NodesUnused.Set(float64(count))
	return fresh
}

// replanStranded reports each stranded pod with what the scheduler's Filter plugins answer on its
// node now, as the scheduler asks them (nominations counted), and plans it again: the plan that
// put it there no longer holds, whatever the reason. A pod they accept there is handed back to
// the scheduler instead (retryAccepted): the scheduler has not tried it since (a loaded API
// server, a long queue), and planning it again beside the node that holds it launched nodes too
// many (issue 35's fleet at 4,000 pods, in one run of two: 1,486 pods planned again, 91
// NodeClaims over the need; docs/performance.md).
func (p *Provisioner) replanStranded(ctx context.Context, found []strandedPod, nodes []*corev1.Node, pods []*corev1.Pod, claims []*karpv1.NodeClaim) {
	p.mu.Lock()
	sim, assumed := p.checker, maps.Clone(p.assumed)
	p.mu.Unlock()
	if sim != nil {
		p.checking.Lock()
		view := schedulerview.New(sim, nodes, pods, claims, assumed, p.opts.SchedulerName)
		for i, s := range found {
			if status := view.Admits(ctx, view.PreFilter(ctx, s.pod), s.pod, s.node); status != nil {
				found[i].answer = fmt.Sprintf("%s: %s", status.Plugin(), status.Message())
			} else {
				found[i].answer, found[i].accepted = "they accept it", true
			}
		}
		p.checking.Unlock()
	}
	if found = p.retryAccepted(ctx, found); len(found) == 0 {
		return
	}
	activate := map[string]*corev1.Pod{}
	var toClear []*corev1.Pod
	p.mu.Lock()
	for _, s := range found {
		uid := s.pod.UID
		if p.ownNomination(s.pod) {
			toClear = append(toClear, s.pod)
		}
		p.forgetDestination(uid)
		delete(p.planned, uid)
		p.enqueued[uid] = true
		activate[s.pod.Namespace+"/"+s.pod.Name] = s.pod
	}
	p.mu.Unlock()
	metrics.PodsStrandedTotal.Add(float64(len(found)))
	logger := klog.FromContext(ctx)
	for _, s := range found {
		p.opts.Recorder.Eventf(s.pod, nil, corev1.EventTypeWarning, "Stranded", "Provisioning",
			"Pending %s after node %s came up for it; there the scheduler's Filter plugins answer: %s; planning it again",
			s.up.Round(time.Second), s.node, s.answer)
		logger.Info("Pod stranded beside the node planned for it; planning it again", "pod", klog.KObj(s.pod), "node", s.node,
			"pendingFor", s.up.Round(time.Second), "filter", s.answer)
	}
	for _, pod := range toClear {
		p.setNomination(ctx, pod, "")
	}
	if p.opts.Activate != nil {
		p.opts.Activate(activate)
	}
	p.batcher.Nudge()
}

// retryAccepted hands each pod of found that the Filter plugins accept on its node back to the
// scheduler, to be found again only another strandedAfter on, as long as no scheduling cycle for
// it has failed since it was last handed back: until then it waits its turn in the scheduler's
// queue, and a node planned for it anew would not be tried any sooner (at 4,000 pods on two
// cores, where pods waited over a minute in that queue, planning such pods again launched 198
// NodeClaims over the need). One whose cycle failed since, though its Filter plugins accept it
// there (no room by then, refused at Reserve or Permit), is planned again. It returns the pods to
// plan again.
func (p *Provisioner) retryAccepted(ctx context.Context, found []strandedPod) []strandedPod {
	retry := map[string]*corev1.Pod{}
	var rest []strandedPod
	now := p.opts.Clock.Now()
	p.mu.Lock()
	for _, s := range found {
		h, ok := p.headed[s.pod.UID]
		if !ok || h.node != s.node {
			// Planned elsewhere, or bound, while the Filter plugins were asked: the finding is
			// stale, and the new heading has a clock of its own. Planning these again was 13,300 of
			// the 14,499 re-plans in a 20,000-pod fleet run, where asking took seconds.
			continue
		}
		if !s.accepted {
			rest = append(rest, s)
			continue
		}
		again := !h.retried.IsZero()
		if again && h.failed.After(h.retried) {
			s.answer += " (a scheduling cycle for it failed after it was handed back)"
			rest = append(rest, s)
			continue
		}
		h.retried = now
		p.headed[s.pod.UID] = h
		delete(p.stranded, s.pod.UID)
		retry[s.pod.Namespace+"/"+s.pod.Name] = s.pod
		logger := klog.FromContext(ctx)
		if again {
			logger = logger.V(2) // once per strandedAfter while the scheduler's queue is long
		}
		logger.Info("Pod pending beside the node planned for it, where the scheduler's Filter plugins accept it; handed to the scheduler again",
			"pod", klog.KObj(s.pod), "node", s.node, "pendingFor", s.up.Round(time.Second))
	}
	metrics.PodsStranded.Set(float64(len(p.stranded)))
	p.mu.Unlock()
	if len(retry) > 0 {
		metrics.PodsWoken.Add(float64(len(retry)))
		if p.opts.Activate != nil {
			p.opts.Activate(retry)
		}
	}
	return rest
}
