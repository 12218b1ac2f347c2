package schedulerview

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
	"github.com/tailor-sh/tailor/pkg/simulation"
)

// View is the cluster as the scheduler will weigh a pending pod once the nodes being
// launched come up: every node, and a stand-in under its future name for every launching
// NodeClaim, holding only the pods bound or assumed there; and the pods nominated to them. A plan
// counts its pods on their claims as if they had bound; the scheduler does not. It keeps their room
// only for the pods nominated there, and then counts those pods on that node alone, in its first
// Filter pass, while pods nominated to other nodes count nowhere. Nominations must be written
// with that in mind, or pods end up refused beside the capacity launched for them.
type View struct {
	sim      *simulation.Simulator
	snapshot *schedcache.Snapshot
	// nominated maps node names to the pods nominated there, and nominatedTo pods to their node.
	nominated   map[string][]fwk.PodInfo
	nominatedTo map[types.UID]string
}

// New reads the view from the informers' lists and the scheduler's assumed pods.
// pending are the pods of Tailor's scheduler not yet bound; the nominations among them start the
// view's nominations.
//
// A node whose NodeClaim has not initialized is weighed as the claim says it will be, not as it
// registered: until registration has synced the claim's labels and taints onto it, the Node may
// lack a label its planned pods select, and a refusal read from it would clear nominations the
// node will honour a moment later, letting other pods take the room kept for them.
func New(sim *simulation.Simulator, nodes []*corev1.Node, pods []*corev1.Pod, claims []*karpv1.NodeClaim,
	assumed map[types.UID]string, schedulerName string) *View {
	var placed []*corev1.Pod
	for _, p := range pods {
		if p.Spec.NodeName != "" || assumed[p.UID] != "" {
			placed = append(placed, p)
		}
	}
	c := &planner.Cluster{Nodes: initializedNodes(nodes, claims), Pods: placed, Claims: claims, Assumed: assumed}
	v := c.View(nil)
	sv := &View{sim: sim, snapshot: schedcache.NewSnapshot(v.Pods, v.Nodes),
		nominated: map[string][]fwk.PodInfo{}, nominatedTo: map[types.UID]string{}}
	for _, p := range pods {
		if p.Spec.NodeName == "" && p.DeletionTimestamp == nil && p.Status.NominatedNodeName != "" &&
			p.Spec.SchedulerName == schedulerName && assumed[p.UID] == "" {
			sv.Nominate(p, p.Status.NominatedNodeName)
		}
	}
	return sv
}

// Nominate counts pod as nominated to node from now on, in place of any earlier nomination.
func (v *View) Nominate(pod *corev1.Pod, node string) {
	v.Unnominate(pod)
	info, err := framework.NewPodInfo(pod)
	if err != nil {
		return // a pod whose affinity cannot be parsed is refused by the scheduler anyway
	}
	v.nominated[node] = append(v.nominated[node], info)
	v.nominatedTo[pod.UID] = node
}

// Unnominate counts pod as nominated nowhere.
func (v *View) Unnominate(pod *corev1.Pod) {
	node, ok := v.nominatedTo[pod.UID]
	if !ok {
		return
	}
	delete(v.nominatedTo, pod.UID)
	list := v.nominated[node]
	for i, pi := range list {
		if pi.GetPod().UID == pod.UID {
			v.nominated[node] = append(list[:i:i], list[i+1:]...)
			break
		}
	}
}

// PreFiltered is what the scheduler's PreFilter plugins answered for a pod over the view; the
// state does not depend on nominations, so one serves every node and every set of nominations
// the pod is weighed against.
type PreFiltered struct {
	state  fwk.CycleState
	result *fwk.PreFilterResult
	status *fwk.Status
}

// PreFilter runs the scheduler's PreFilter plugins for pod over the view.
func (v *View) PreFilter(ctx context.Context, pod *corev1.Pod) PreFiltered {
	v.sim.Use(v.snapshot)
	state, res, status := v.sim.PreFilter(ctx, pod)
	return PreFiltered{state: state, result: res, status: status}
}

// Admits asks the scheduler's Filter plugins, as the scheduler asks them in its own cycle (see
// simulation.FilterWithNominated), whether pod may bind to node now, with the view's nominations.
// A nil status means yes; otherwise the status says why not, in the plugins' words.
func (v *View) Admits(ctx context.Context, pre PreFiltered, pod *corev1.Pod, node string) *fwk.Status {
	if pre.status != nil {
		return pre.status
	}
	if !simulation.AllowedByPreFilter(pre.result, node) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin(s) at PreFilter")
	}
	info, err := v.snapshot.NodeInfos().Get(node)
	if err != nil {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("node %s is not in the cluster", node))
	}
	v.sim.Use(v.snapshot)
	v.sim.SetNominated(v.nominated)
	if status := v.sim.FilterWithNominated(ctx, pre.state, pod, info); !status.IsSuccess() {
		return status
	}
	return nil
}

// initializedNodes leaves out the nodes of NodeClaims that have not initialized: Cluster.View then
// stands each in by its claim, under the node's name, with the pods bound there.
func initializedNodes(nodes []*corev1.Node, claims []*karpv1.NodeClaim) []*corev1.Node {
	launching := map[string]bool{}
	for _, c := range claims {
		if c.DeletionTimestamp == nil && c.Status.NodeName != "" && !c.IsTrue(karpv1.ConditionTypeInitialized) {
			launching[c.Status.NodeName] = true
		}
	}
	if len(launching) == 0 {
		return nodes
	}
	out := make([]*corev1.Node, 0, len(nodes))
	for _, n := range nodes {
		if !launching[n.Name] {
			out = append(out, n)
		}
	}
	return out
}
