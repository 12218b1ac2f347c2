package provisioning

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/cloud/fake/kubelet"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// TestZoneSpreadBindsBesideItsCapacity is the workload that left eight of nine pods Pending beside
// the nodes launched for them: on the AWS provider, every pod runs, three per zone, and Tailor
// found none stranded.
func TestZoneSpreadBindsBesideItsCapacity(t *testing.T) {
	e := env.NewAWS(t)
	if err := sandbox.ApplyFiles(e.Ctx, e.Cluster.Config, []string{"testdata/zone-spread"}, nil); err != nil {
		t.Fatal(err)
	}
	pods := e.WaitRunning("app=zone-spread", 9, 90*time.Second)
	zones := map[string]int{}
	for _, p := range pods {
		n, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		zones[n.Labels[corev1.LabelTopologyZone]]++
	}
	if len(zones) != 3 {
		t.Fatalf("pods per zone = %v, want three zones of three", zones)
	}
	for z, n := range zones {
		if n != 3 {
			t.Fatalf("zone %s has %d pods (%v), want 3 each", z, n, zones)
		}
	}
	state, err := e.Cluster.Read(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !state.Settled() {
		t.Fatal("the cluster has not settled with every pod running")
	}
}

// TestNodeThatRefusesItsPodIsReplaced: the first node comes up with a taint its pod does not
// tolerate, which no plan could foresee. The scheduler refuses the pod there and hands it back to
// Tailor, whose next plan sees the taint and launches a node the pod runs on, well before the
// pod would count as stranded.
func TestNodeThatRefusesItsPodIsReplaced(t *testing.T) {
	var joined atomic.Bool
	e := env.NewWithJoiner(t, func(inner fake.Joiner) fake.Joiner {
		return env.JoinerFunc(func(ctx context.Context, inst fake.Instance) error {
			if joined.Swap(true) {
				return inner.Join(ctx, inst)
			}
			return joinTainted(ctx, inner.(*kubelet.Joiner).Client, inst)
		})
	})
	e.CreateNodePool(env.NodePool("default"))
	if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, env.DeploymentOf("lonely", 1, "1", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := e.WaitRunning("app=lonely", 1, 20*time.Second)
	node, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, pods[0].Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, taint := range node.Spec.Taints {
		if taint.Key == faultyTaint {
			t.Fatalf("pod runs on %s, whose taint it does not tolerate", node.Name)
		}
	}
	nodes, err := e.Cluster.Kube.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 2 {
		t.Fatalf("%d nodes, want the refusing one and its replacement", len(nodes.Items))
	}
}

const faultyTaint = "example.com/faulty"

// joinTainted registers the instance's node as its kubelet would, plus a taint no pod tolerates.
func joinTainted(ctx context.Context, kube kubernetes.Interface, inst fake.Instance) error {
	node := fake.NodeFor(inst)
	node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: faultyTaint, Effect: corev1.TaintEffectNoSchedule})
	_, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	return err
}

// TestAPodWaitsForTheNodeLaunchedForIt: two replicas that prefer different zones get a node each,
// and the first node comes up 5 s before the second. The second replica fits beside the
// first, and the scheduler alone would bind it there, leaving the node launched for it empty
// until consolidation removed it. It waits for its own node instead. The replicas come in one
// batch, or in two (scaled from one to two): then the second is planned while its sibling's
// claim is in flight, and must not take room on it. CI split the one batch in two on a loaded
// machine once, and the second replica ran beside the first. A zone spread scaled the same way
// gets a zone per replica too, though the scheduler sees no second zone until a node runs there.
func TestAPodWaitsForTheNodeLaunchedForIt(t *testing.T) {
	preferApart := func(spec *corev1.PodSpec) {
		spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{
				TopologyKey: corev1.LabelTopologyZone, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "apart"}},
			}}},
		}}
	}
	spreadOverZones := func(spec *corev1.PodSpec) {
		spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "apart"}},
		}}
	}
	for _, tc := range []struct {
		name string
		// scaled: the Deployment is scaled from one replica to two once the first replica's
		// NodeClaim exists, so that the second is planned while that claim is in flight.
		scaled bool
		with   func(*corev1.PodSpec)
	}{
		{name: "one batch", with: preferApart},
		{name: "two batches", scaled: true, with: preferApart},
		{name: "zone spread in two batches", scaled: true, with: spreadOverZones},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// No node joins before both replicas have a NodeClaim; then the first joins at once
			// and the second 5 s later.
			bothPlanned := make(chan struct{})
			var joins atomic.Int32
			e := env.NewWithJoiner(t, func(inner fake.Joiner) fake.Joiner {
				return env.JoinerFunc(func(ctx context.Context, inst fake.Instance) error {
					delay := time.Duration(0)
					if joins.Add(1) > 1 {
						delay = 5 * time.Second
					}
					for _, wait := range []<-chan struct{}{bothPlanned, afterChan(delay)} {
						select {
						case <-wait:
						case <-ctx.Done():
							return ctx.Err()
						}
					}
					return inner.Join(ctx, inst)
				})
			})
			e.CreateNodePool(env.NodePool("default"))
			replicas := int32(2)
			if tc.scaled {
				replicas = 1
			}
			d := env.DeploymentOf("apart", replicas, "100m", "128Mi")
			tc.with(&d.Spec.Template.Spec)
			if _, err := e.Cluster.Kube.AppsV1().Deployments("default").Create(e.Ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if tc.scaled {
				e.WaitForClaims(1, 30*time.Second)
				e.Scale(d, 2)
			}
			// A plan that put the second replica on the first replica's claim makes no second.
			e.WaitForClaims(2, 30*time.Second)
			close(bothPlanned)
			pods := e.WaitRunning("app=apart", 2, 60*time.Second)
			if pods[0].Spec.NodeName == pods[1].Spec.NodeName {
				t.Fatalf("both replicas run on %s, the node that came up first", pods[0].Spec.NodeName)
			}
			zones := map[string]bool{}
			for _, p := range pods {
				n, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, p.Spec.NodeName, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				zones[n.Labels[corev1.LabelTopologyZone]] = true
			}
			if len(zones) != 2 {
				t.Fatalf("both replicas run in zone %v; want one zone each", zones)
			}
			nodes, err := e.Cluster.Kube.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(nodes.Items) != 2 {
				t.Fatalf("%d nodes, want one per replica", len(nodes.Items))
			}
		})
	}
}

// afterChan is closed after d.
func afterChan(d time.Duration) <-chan struct{} {
	c := make(chan struct{})
	time.AfterFunc(d, func() { close(c) })
	return c
}
