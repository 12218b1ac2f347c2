package faults

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/nodetaint"
)

// chaosDayFaults lists what keeps the fleet from being settled: the Deployment's pods not all
// Running and Ready (a pod lost or Pending), an instance without its NodeClaim (leaked), a
// NodeClaim with two instances or two instances tagged for one NodeClaim (doubled), a NodeClaim
// without its node or a node without its NodeClaim, a NodeClaim being deleted or a node tainted
// karpenter.sh/disrupted (a disruption half done). Empty means settled.
func (e *chaosDayEnv) chaosDayFaults(app string) []string {
	var faults []string
	claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	nodes, err := e.Cluster.Kube.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	d, err := e.Cluster.Kube.AppsV1().Deployments("default").Get(e.Ctx, app, metav1.GetOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	want := int(*d.Spec.Replicas)
	if ready := e.ReadyPods("app=" + app); ready != want {
		faults = append(faults, fmt.Sprintf("%d of %d %s pods Running and Ready", ready, want, app))
	}
	pods, err := e.Cluster.Kube.CoreV1().Pods("").List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	exists := map[string]bool{}
	for _, n := range nodes.Items {
		exists[n.Name] = true
	}
	for _, p := range pods.Items {
		switch {
		case p.Spec.NodeName == "":
			faults = append(faults, fmt.Sprintf("pod %s is Pending", p.Name))
		case !exists[p.Spec.NodeName]:
			faults = append(faults, fmt.Sprintf("pod %s is bound to node %s, which is gone", p.Name, p.Spec.NodeName))
		}
	}

	byName := map[string]*karpv1.NodeClaim{}
	byProvider := map[string]*karpv1.NodeClaim{}
	for i := range claims.Items {
		c := &claims.Items[i]
		byName[c.Name] = c
		if c.Status.ProviderID != "" {
			byProvider[c.Status.ProviderID] = c
		}
		if c.DeletionTimestamp != nil {
			faults = append(faults, fmt.Sprintf("NodeClaim %s is being deleted%s", c.Name, claimDrainState(c)))
		} else if !c.IsTrue(karpv1.ConditionTypeInitialized) {
			faults = append(faults, fmt.Sprintf("NodeClaim %s is not initialized", c.Name))
		}
	}
	perClaim := map[string][]string{}
	for _, inst := range e.emu.Instances() {
		if inst.State == "terminated" {
			continue
		}
		claim := inst.Tags[awsv1.TagKeyNodeClaim]
		perClaim[claim] = append(perClaim[claim], inst.ID)
		c, ok := byName[claim]
		switch {
		case claim == "":
			faults = append(faults, fmt.Sprintf("instance %s carries no %s tag", inst.ID, awsv1.TagKeyNodeClaim))
		case !ok:
			faults = append(faults, fmt.Sprintf("instance %s is leaked: its NodeClaim %s is gone", inst.ID, claim))
		case c.Status.ProviderID != inst.ProviderID():
			faults = append(faults, fmt.Sprintf("instance %s is tagged for NodeClaim %s, which owns %q", inst.ID, claim, c.Status.ProviderID))
		}
	}
	for claim, ids := range perClaim {
		if len(ids) > 1 {
			faults = append(faults, fmt.Sprintf("NodeClaim %s has %d running instances %v", claim, len(ids), ids))
		}
	}
	withNode := map[string]bool{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		c, ok := byProvider[n.Spec.ProviderID]
		if !ok {
			faults = append(faults, fmt.Sprintf("node %s has no NodeClaim", n.Name))
		} else {
			withNode[c.Name] = true
		}
		if nodetaint.IsDisrupted(n) {
			faults = append(faults, fmt.Sprintf("node %s is tainted %s%s", n.Name, karpv1.DisruptedTaintKey, nodeDrainState(n, pods.Items)))
		}
	}
	for name := range byName {
		if !withNode[name] {
			faults = append(faults, fmt.Sprintf("NodeClaim %s has no node", name))
		}
	}
	slices.Sort(faults)
	return faults
}

// emptyNodes lists the nodes Tailor launched that run no pod of app: what consolidation after
// a scale-down must have removed.
func (e *chaosDayEnv) emptyNodes(app string) []string {
	pods, err := e.Cluster.Kube.CoreV1().Pods("").List(e.Ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return []string{err.Error()}
	}
	used := map[string]bool{}
	for _, p := range pods.Items {
		used[p.Spec.NodeName] = true
	}
	nodes, err := e.Cluster.Kube.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{LabelSelector: karpv1.NodePoolLabelKey})
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, n := range nodes.Items {
		if !used[n.Name] {
			out = append(out, n.Name)
		}
	}
	return out
}

// availabilityWatch samples, every 50 ms, how many of a Deployment's pods are short of its
// replicas (not Running and Ready, or being deleted) and the status of its PodDisruptionBudget.
// Its PDB allows maxUnavailable; Tailor evicts through the Eviction API, which refuses what the
// budget does not allow, so only a pod removed around the budget (a node deleted undrained, a
// drain that forgot the budget after a restart) makes either reading exceed it.
type availabilityWatch struct {
	stop chan struct{}
	done chan struct{}

	mu             sync.Mutex
	samples        int
	maxUnavailable int
	worstAt        string
	pdbViolations  []string
	pdbMet         bool
}

func (e *chaosDayEnv) watchAvailability(app string) *availabilityWatch {
	w := &availabilityWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-e.Ctx.Done():
				return
			case <-tick.C:
			}
			w.read(e, app)
		}
	}()
	return w
}

func (w *availabilityWatch) read(e *chaosDayEnv, app string) {
	// The replicas are read on both sides of the pod list and the smaller kept: a scale-down
	// between the first read and the list would otherwise count the pods the ReplicaSet removed
	// as unavailable (seed 1 scales 9 to 3 and read 6 unavailable that way).
	before, err := e.Cluster.Kube.AppsV1().Deployments("default").Get(e.Ctx, app, metav1.GetOptions{})
	if err != nil {
		return
	}
	ready := e.ReadyPods("app=" + app)
	after, err := e.Cluster.Kube.AppsV1().Deployments("default").Get(e.Ctx, app, metav1.GetOptions{})
	if err != nil {
		return
	}
	replicas := min(*before.Spec.Replicas, *after.Spec.Replicas)
	pdb, pdbErr := e.Cluster.Kube.PolicyV1().PodDisruptionBudgets("default").Get(e.Ctx, app, metav1.GetOptions{})
	w.mu.Lock()
	defer w.mu.Unlock()
	w.samples++
	if ready >= 0 {
		if short := int(replicas) - ready; short > w.maxUnavailable {
			w.maxUnavailable, w.worstAt = short, time.Now().Format("15:04:05.000")
		}
	}
	if pdbErr != nil || pdb.Status.ObservedGeneration < pdb.Generation {
		return
	}
	st := pdb.Status
	switch {
	case st.CurrentHealthy >= st.DesiredHealthy:
		w.pdbMet = true
	case w.pdbMet:
		w.pdbViolations = append(w.pdbViolations, fmt.Sprintf("%s at %s: currentHealthy %d < desiredHealthy %d (expectedPods %d)",
			pdb.Name, time.Now().Format("15:04:05.000"), st.CurrentHealthy, st.DesiredHealthy, st.ExpectedPods))
	}
}

// Stop ends the watch and fails the test if more pods were unavailable at once than allowed, or
// the budget's status fell below what it requires.
func (w *availabilityWatch) Stop(e *chaosDayEnv, allowed int) {
	e.T.Helper()
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	e.T.Logf("availability: %d samples, at most %d pods unavailable at once (allowed %d), %d PDB violations", w.samples, w.maxUnavailable, allowed, len(w.pdbViolations))
	if w.maxUnavailable > allowed {
		e.T.Errorf("%d pods were unavailable at once at %s; the PodDisruptionBudget allows %d", w.maxUnavailable, w.worstAt, allowed)
	}
	if len(w.pdbViolations) > 0 {
		e.T.Errorf("the PodDisruptionBudget was violated %d times, first: %s", len(w.pdbViolations), strings.Join(w.pdbViolations[:1], ""))
	}
}

// readyNodes are the Ready nodes Tailor launched, by name.
func (e *chaosDayEnv) readyNodes() []corev1.Node {
	list, err := e.Cluster.Kube.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{LabelSelector: karpv1.NodePoolLabelKey})
	if err != nil {
		e.T.Fatal(err)
	}
	var out []corev1.Node
	for _, n := range list.Items {
		if n.DeletionTimestamp == nil && !nodetaint.IsDisrupted(&n) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// describeFleet writes out the pods, nodes and NodeClaims, for a failure to show where the fleet
// stood.
func (e *chaosDayEnv) describeFleet() string {
	var b strings.Builder
	if pods, err := e.Cluster.Kube.CoreV1().Pods("").List(e.Ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "pod %s: node %q nominated %q phase %s deleting %v\n", p.Name, p.Spec.NodeName, p.Status.NominatedNodeName, p.Status.Phase, p.DeletionTimestamp != nil)
		}
	}
	if nodes, err := e.Cluster.Kube.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{}); err == nil {
		for _, n := range nodes.Items {
			fmt.Fprintf(&b, "node %s: %s deleting %v finalizers %v taints %v\n", n.Name, n.Spec.ProviderID, n.DeletionTimestamp != nil, n.Finalizers, n.Spec.Taints)
		}
	}
	if claims, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{}); err == nil {
		for _, c := range claims.Items {
			var conds []string
			for _, cond := range c.Status.Conditions {
				conds = append(conds, fmt.Sprintf("%s=%s(%s: %s)", cond.Type, cond.Status, cond.Reason, cond.Message))
			}
			fmt.Fprintf(&b, "nodeclaim %s: %s node %q deleting %v finalizers %v annotations %v conditions %v\n", c.Name, c.Status.ProviderID, c.Status.NodeName,
				c.DeletionTimestamp != nil, c.Finalizers, c.Annotations, conds)
		}
	}
	if pdbs, err := e.Cluster.Kube.PolicyV1().PodDisruptionBudgets("").List(e.Ctx, metav1.ListOptions{}); err == nil {
		for _, pdb := range pdbs.Items {
			st := pdb.Status
			fmt.Fprintf(&b, "pdb %s: healthy %d of %d desired, %d allowed, disrupted pods %v\n", pdb.Name, st.CurrentHealthy, st.DesiredHealthy, st.DisruptionsAllowed, st.DisruptedPods)
		}
	}
	for _, inst := range e.emu.Instances() {
		fmt.Fprintf(&b, "instance %s: %s %s claim %q\n", inst.ID, inst.State, inst.InstanceType, inst.Tags[awsv1.TagKeyNodeClaim])
	}
	return b.String()
}

// claimDrainState is what a NodeClaim being deleted waits on, as its conditions say: the drain's
// Drained condition (a PodDisruptionBudget, a pod held for want of a place) and whether its
// instance is terminating. A disruption left half done then names its step in the failure.
func claimDrainState(c *karpv1.NodeClaim) string {
	var parts []string
	for _, t := range []string{karpv1.ConditionTypeDrained, karpv1.ConditionTypeVolumesDetached, karpv1.ConditionTypeInstanceTerminating, karpv1.ConditionTypeDisruptionReason} {
		if cond := c.GetCondition(t); cond != nil {
			parts = append(parts, fmt.Sprintf("%s=%s %s %q since %s", t, cond.Status, cond.Reason, cond.Message, cond.LastTransitionTime.UTC().Format(time.RFC3339)))
		}
	}
	if len(parts) == 0 {
		return " (no drain condition yet)"
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// nodeDrainState says whether a tainted node is being deleted and which pods are still on it.
func nodeDrainState(n *corev1.Node, pods []corev1.Pod) string {
	var on []string
	for _, p := range pods {
		if p.Spec.NodeName == n.Name {
			state := string(p.Status.Phase)
			if p.DeletionTimestamp != nil {
				// The grace period tells a drain in progress from a deletion the API server
				// stopped halfway (0: the second write never came).
				state += fmt.Sprintf(", being deleted since %s", p.DeletionTimestamp.Format(time.RFC3339))
				if g := p.DeletionGracePeriodSeconds; g != nil {
					state += fmt.Sprintf(" with a grace period of %ds", *g)
				}
			}
			on = append(on, fmt.Sprintf("%s/%s [%s]", p.Namespace, p.Name, state))
		}
	}
	deleting := "not being deleted"
	if n.DeletionTimestamp != nil {
		deleting = fmt.Sprintf("being deleted since %s, finalizers %v", n.DeletionTimestamp.UTC().Format(time.RFC3339), n.Finalizers)
	}
	return fmt.Sprintf(" (%s; pods on it: %s)", deleting, strings.Join(on, ", "))
}
