package disruption

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/lifecycle/drift"
	"github.com/tailor-sh/tailor/pkg/lifecycle/interruption"
	"github.com/tailor-sh/tailor/pkg/metrics"
	"github.com/tailor-sh/tailor/pkg/nodepool/hash"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// An injected spot interruption: the node is tainted before anything else happens, capacity for
// its pods is planned while they still run on it (their Nominated Events say so), one
// replacement launches and initializes, the pods run there, and the old node and instance are
// gone, all before the deadline: the cloud, which takes the instance at the deadline, never had to.
func TestInterruptionReplacesTheNodeBeforeItsDeadline(t *testing.T) {
	e := env.New(t)
	node := e.LaunchOneNode("web", 3)
	old := e.ClaimOfNode(node)
	before := e.PodNames("app=web")
	taintedFirst := watchTaintBeforeDeletion(e, node)
	decisions := testutil.ToFloat64(metrics.DisruptionDecisions.WithLabelValues("replace", "interruption", "Interrupted", old.Labels[karpv1.NodePoolLabelKey]))

	sent := e.Clock.Now()
	deadline := sent.Add(2 * time.Minute)
	e.Cloud.InjectInterruption(cloud.Interruption{ProviderID: node.Spec.ProviderID, Kind: cloud.InterruptionSpot, Deadline: deadline})

	e.WaitNodeGone(node.Name, time.Minute)
	pods := e.WaitRunning("app=web", 3, time.Minute)
	now := e.Clock.Now()
	if !now.Before(deadline) {
		t.Fatalf("the node was replaced at %s, after the deadline %s", now, deadline)
	}
	t.Logf("node replaced and its pods running again %s after the notice, %s before the deadline", now.Sub(sent), deadline.Sub(now))
	if r := e.Cloud.Reclaimed(); len(r) > 0 {
		t.Fatalf("the cloud had to reclaim %v at the deadline", r)
	}
	if e.InstanceExists(node.Spec.ProviderID) {
		t.Fatalf("instance %s survived its interruption", node.Spec.ProviderID)
	}
	if err := <-taintedFirst; err != nil {
		t.Fatal(err)
	}

	// The old claim's finalizer goes last, a moment after its node and instance.
	var claims []karpv1.NodeClaim
	e.WaitFor("one new, Initialized NodeClaim in place of "+old.Name, 30*time.Second, func() (bool, string) {
		list, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		claims = list.Items
		return len(claims) == 1 && claims[0].Name != old.Name && claims[0].IsTrue(karpv1.ConditionTypeInitialized), env.ClaimSummary(claims)
	})
	for _, p := range pods {
		if p.Spec.NodeName != claims[0].Status.NodeName {
			t.Errorf("pod %s runs on %s, not on the replacement %s", p.Name, p.Spec.NodeName, claims[0].Status.NodeName)
		}
	}
	// Planned before the drain: the pods that were on the node got Nominated to the replacement
	// while they still existed, instead of their successors being planned after the eviction.
	for _, name := range before {
		e.WaitFor("pod "+name+" planned onto "+claims[0].Name+" before its eviction", 10*time.Second, func() (bool, string) {
			evs := e.EventsFor("Nominated", "Pod")
			return slices.ContainsFunc(evs, func(ev eventsv1.Event) bool {
				return ev.Regarding.Name == name && strings.Contains(ev.Note, claims[0].Name)
			}), fmt.Sprint(env.Notes(evs))
		})
	}
	// The Events on the Node and the NodeClaim name the kind and the deadline.
	stamp := deadline.UTC().Format("2006-01-02T15:04:05Z")
	for _, kind := range []string{"Node", "NodeClaim"} {
		reason := interruption.EventReason(cloud.InterruptionSpot)
		e.WaitFor(fmt.Sprintf("a %s Event on the %s naming the deadline", reason, kind), 10*time.Second, func() (bool, string) {
			evs := e.EventsFor(reason, kind)
			return slices.ContainsFunc(evs, func(ev eventsv1.Event) bool { return strings.Contains(ev.Note, stamp) }), fmt.Sprint(env.Notes(evs))
		})
		e.WaitFor(fmt.Sprintf("a %s Event on the %s", interruption.TerminatingOnInterruption, kind), 10*time.Second, func() (bool, string) {
			evs := e.EventsFor(interruption.TerminatingOnInterruption, kind)
			return len(evs) > 0, "none yet"
		})
	}
	if got := testutil.ToFloat64(metrics.DisruptionDecisions.WithLabelValues("replace", "interruption", "Interrupted", old.Labels[karpv1.NodePoolLabelKey])); got != decisions+1 {
		t.Errorf("tailor_disruption_decisions_total{replace,Interrupted} went from %v to %v, want one more", decisions, got)
	}
}

// A rebalance recommendation is only recorded: the node stays.
func TestRebalanceRecommendationKeepsTheNode(t *testing.T) {
	e := env.New(t)
	node := e.LaunchOneNode("web", 1)
	e.Cloud.InjectInterruption(cloud.Interruption{ProviderID: node.Spec.ProviderID, Kind: cloud.InterruptionRebalance})
	e.WaitFor("the rebalance recommendation's Event on the NodeClaim", time.Minute, func() (bool, string) {
		return len(e.EventsFor(interruption.EventReason(cloud.InterruptionRebalance), "NodeClaim")) > 0, "no Event yet"
	})
	n, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the node went after a rebalance recommendation: %v", err)
	}
	if n.DeletionTimestamp != nil || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.DisruptedTaintKey }) {
		t.Fatalf("node %s is being disrupted after a rebalance recommendation: %+v", n.Name, n.Spec.Taints)
	}
}

// A NodeClaim older than its expireAfter is replaced: moving Tailor's clock past it makes the
// node go and its pods run on a new one, which does not itself expire.
func TestExpiredNodeIsReplaced(t *testing.T) {
	e := env.New(t)
	e.ApplyExample("ec2nodeclass.yaml")
	np := env.NodePool("default")
	np.Spec.Template.Spec.ExpireAfter = karpv1.NewNillableDuration(time.Hour)
	e.CreateNodePool(np)
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf("web", 2, "100m", "128Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := e.WaitRunning("app=web", 2, 2*time.Minute)
	node, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, pods[0].Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := e.ClaimOfNode(node)

	e.Clock.Step(61 * time.Minute)
	e.WaitNodeGone(node.Name, time.Minute)
	pods = e.WaitRunning("app=web", 2, time.Minute)
	for _, p := range pods {
		if p.Spec.NodeName == node.Name {
			t.Fatalf("pod %s still on the expired node", p.Name)
		}
	}
	e.WaitFor("an Expired Event on NodeClaim "+old.Name, 10*time.Second, func() (bool, string) {
		evs := e.EventsFor("Expired", "NodeClaim")
		return slices.ContainsFunc(evs, func(ev eventsv1.Event) bool { return ev.Regarding.Name == old.Name }), fmt.Sprint(env.Notes(evs))
	})
	// The replacement's age counts from its own launch: it stays. The old claim's finalizer
	// ends its instance after the node has gone, so it may outlive the node by a moment.
	e.WaitFor("one live replacement NodeClaim", 30*time.Second, func() (bool, string) {
		list, err := e.Cluster.Tailor.KarpenterV1().NodeClaims().List(e.Ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		claims := list.Items
		return len(claims) == 1 && claims[0].Name != old.Name && claims[0].DeletionTimestamp == nil, env.ClaimSummary(claims)
	})
}

// Changing the NodePool's template drifts its existing NodeClaims, with the reason; changing it
// back undrifts them; requirements the node no longer meets are RequirementsDrifted.
func TestNodePoolChangeDriftsItsClaims(t *testing.T) {
	e := env.New(t)
	node := e.LaunchOneNode("web", 1)
	claim := e.ClaimOfNode(node)
	pool, err := e.Cluster.Tailor.KarpenterV1().NodePools().Get(e.Ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !hash.Stamped(claim.Annotations, pool) {
		t.Fatalf("NodeClaim %s does not carry NodePool %s's hash: %v", claim.Name, pool.Name, claim.Annotations)
	}
	e.WaitFor("NodePool default to be stamped with its hash", 30*time.Second, func() (bool, string) {
		np, err := e.Cluster.Tailor.KarpenterV1().NodePools().Get(e.Ctx, "default", metav1.GetOptions{})
		return err == nil && hash.Stamped(np.Annotations, np), fmt.Sprintf("annotations %v", np.Annotations)
	})

	e.EditNodePool("default", func(np *karpv1.NodePool) { np.Spec.Template.Labels = map[string]string{"team": "payments"} })
	e.WaitDrifted(claim.Name, drift.NodePoolDrifted)
	e.WaitFor("a Drifted Event on the NodeClaim", 10*time.Second, func() (bool, string) {
		evs := e.EventsFor("Drifted", "NodeClaim")
		return slices.ContainsFunc(evs, func(ev eventsv1.Event) bool {
			return ev.Regarding.Name == claim.Name && strings.Contains(ev.Note, drift.NodePoolDrifted)
		}), fmt.Sprint(env.Notes(evs))
	})

	e.EditNodePool("default", func(np *karpv1.NodePool) { np.Spec.Template.Labels = nil })
	e.WaitDrifted(claim.Name, "")

	other := karpv1.CapacityTypeOnDemand
	if claim.Labels[karpv1.CapacityTypeLabelKey] == other {
		other = karpv1.CapacityTypeSpot
	}
	e.EditNodePool("default", func(np *karpv1.NodePool) {
		for i, r := range np.Spec.Template.Spec.Requirements {
			if r.Key == karpv1.CapacityTypeLabelKey {
				np.Spec.Template.Spec.Requirements[i].Values = []string{other}
			}
		}
	})
	e.WaitDrifted(claim.Name, drift.RequirementsDrifted)
	// Replacing drifted nodes is the budgeted disruption loop's job:
	// TestRequirementsChangeRollsNodesOneAtATime.
}
