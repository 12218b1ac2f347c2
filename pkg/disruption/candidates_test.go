package disruption

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

func TestCandidates(t *testing.T) {
	cases := []struct {
		name     string
		nodeOpts []nodeOpt
		// setup adds pods and PDBs around node n1.
		setup  func(c *cluster)
		closed map[string]bool
		// blocked is part of why n1 is not a candidate; "" means it is one, with pods to move.
		blocked  string
		pods     int
		unpriced bool
	}{
		{name: "an empty initialized node"},
		{name: "a node with a pod to move", setup: func(c *cluster) { c.pod("p1", "n1", "100m", "128Mi") }, pods: 1},
		{name: "its NodePool's node class is not ready",
			setup: func(c *cluster) {
				c.Unavailable = map[string]string{"default": "EC2NodeClass default is not ready: AMINotFound"}
			},
			blocked: "cannot launch: EC2NodeClass default is not ready"},
		{name: "not initialized", nodeOpts: []nodeOpt{uninitialized()}, blocked: "not initialized"},
		{name: "claim being deleted", nodeOpts: []nodeOpt{claimDeleting()}, blocked: "already being disrupted"},
		{name: "node tainted karpenter.sh/disrupted", nodeOpts: []nodeOpt{nodeTainted(karpv1.DisruptedNoScheduleTaint)},
			blocked: "already being disrupted"},
		{name: "closed by a command in progress", closed: map[string]bool{"n1": true}, blocked: "already being disrupted"},
		{name: "node annotated do-not-disrupt=true", nodeOpts: []nodeOpt{nodeAnnotated(karpv1.DoNotDisruptAnnotationKey, "true")},
			blocked: "annotated karpenter.sh/do-not-disrupt"},
		{name: "node annotated do-not-disrupt=false", nodeOpts: []nodeOpt{nodeAnnotated(karpv1.DoNotDisruptAnnotationKey, "false")}},
		{name: "pod annotated do-not-disrupt=true",
			setup:   func(c *cluster) { c.pod("p1", "n1", "100m", "128Mi", doNotDisruptPod("true")) },
			blocked: "pod default/p1 is annotated karpenter.sh/do-not-disrupt=true"},
		{name: "pod do-not-disrupt 10m, started 5m ago",
			setup: func(c *cluster) {
				c.pod("p1", "n1", "100m", "128Mi", doNotDisruptPod("10m"), startedAgo(5*time.Minute))
			},
			blocked: "do-not-disrupt=10m"},
		{name: "pod do-not-disrupt 10m, started 20m ago",
			setup: func(c *cluster) {
				c.pod("p1", "n1", "100m", "128Mi", doNotDisruptPod("10m"), startedAgo(20*time.Minute))
			},
			pods: 1},
		{name: "pod do-not-disrupt 10m, created 5m ago and not started",
			setup: func(c *cluster) {
				c.pod("p1", "n1", "100m", "128Mi", doNotDisruptPod("10m"), notStarted(5*time.Minute))
			},
			blocked: "do-not-disrupt=10m"},
		{name: "pod do-not-disrupt with an invalid value is ignored",
			setup: func(c *cluster) { c.pod("p1", "n1", "100m", "128Mi", doNotDisruptPod("soon")) }, pods: 1},
		{name: "pod do-not-disrupt with a negative duration is ignored",
			setup: func(c *cluster) { c.pod("p1", "n1", "100m", "128Mi", doNotDisruptPod("-10m")) }, pods: 1},
		{name: "a finished pod's do-not-disrupt does not count",
			setup: func(c *cluster) {
				c.pod("p1", "n1", "100m", "128Mi", doNotDisruptPod("true"), phase(corev1.PodSucceeded))
			}},
		{name: "a DaemonSet pod's do-not-disrupt counts",
			setup:   func(c *cluster) { c.pod("p1", "n1", "100m", "128Mi", doNotDisruptPod("true"), ownedByDaemonSet()) },
			blocked: "do-not-disrupt=true"},
		{name: "PDB allowing no disruption covers a pod",
			setup: func(c *cluster) {
				c.pod("p1", "n1", "100m", "128Mi", podLabeled("tier", "web"))
				c.pdb("web", "default", 0, selector("tier", "web"))
			},
			blocked: "PodDisruptionBudget default/web allows no disruption of pod p1"},
		{name: "PDB allowing a disruption covers a pod",
			setup: func(c *cluster) {
				c.pod("p1", "n1", "100m", "128Mi", podLabeled("tier", "web"))
				c.pdb("web", "default", 1, selector("tier", "web"))
			},
			pods: 1},
		{name: "PDB allowing no disruption selects other pods",
			setup: func(c *cluster) {
				c.pod("p1", "n1", "100m", "128Mi", podLabeled("tier", "web"))
				c.pdb("db", "default", 0, selector("tier", "db"))
			},
			pods: 1},
		{name: "PDB allowing no disruption in another namespace",
			setup: func(c *cluster) {
				c.pod("p1", "n1", "100m", "128Mi", podLabeled("tier", "web"))
				c.pdb("web", "other", 0, selector("tier", "web"))
			},
			pods: 1},
		{name: "PDB with an empty selector covers every pod of its namespace",
			setup: func(c *cluster) {
				c.pod("p1", "n1", "100m", "128Mi")
				c.pdb("all", "default", 0, &metav1.LabelSelector{})
			},
			blocked: "PodDisruptionBudget default/all allows no disruption of pod p1"},
		{name: "PDB without a selector covers no pod",
			setup: func(c *cluster) {
				c.pod("p1", "n1", "100m", "128Mi")
				c.pdb("none", "default", 0, nil)
			},
			pods: 1},
		{name: "two PDBs cover a pod",
			setup: func(c *cluster) {
				c.pod("p1", "n1", "100m", "128Mi", podLabeled("tier", "web"))
				c.pdb("web", "default", 1, selector("tier", "web"))
				c.pdb("p1", "default", 1, selector("app", "p1"))
			},
			blocked: "covered by 2 PodDisruptionBudgets"},
		{name: "DaemonSet pods do not move with the node",
			setup: func(c *cluster) {
				c.pod("ds1", "n1", "100m", "128Mi", ownedByDaemonSet())
				c.pod("p1", "n1", "100m", "128Mi")
			},
			pods: 1},
		{name: "a pod that tolerates karpenter.sh/disrupted stays",
			setup: func(c *cluster) { c.pod("p1", "n1", "100m", "128Mi", toleratesDisrupted()) }},
		{name: "a pod nominated to the node",
			setup:   func(c *cluster) { c.pod("p1", "", "100m", "128Mi", nominatedTo("n1")) },
			blocked: "nominated"},
		{name: "a pod nominated to another node",
			setup: func(c *cluster) { c.pod("p1", "", "100m", "128Mi", nominatedTo("n2")) }},
		{name: "pods planned onto the node are on their way",
			setup:   func(c *cluster) { c.Awaited = map[string]bool{"n1": true} },
			blocked: "pods planned onto it are still on their way"},
		{name: "an assumed pod is the node's pod",
			setup: func(c *cluster) {
				p := c.pod("p1", "", "100m", "128Mi")
				c.Assumed[p.UID] = "n1"
			},
			pods: 1},
		{name: "an assumed pod's do-not-disrupt counts",
			setup: func(c *cluster) {
				p := c.pod("p1", "", "100m", "128Mi", doNotDisruptPod("true"))
				c.Assumed[p.UID] = "n1"
			},
			blocked: "do-not-disrupt=true"},
		{name: "a pod of a gang",
			setup: func(c *cluster) {
				c.pod("p1", "n1", "100m", "128Mi", inGroup("train"))
				c.Gangs = map[string]bool{"default/train": true}
			},
			blocked: "pod default/p1 belongs to the gang of PodGroup default/train"},
		{name: "a pod of a PodGroup without a gang policy moves",
			setup: func(c *cluster) {
				c.pod("p1", "n1", "100m", "128Mi", inGroup("serve"))
				c.Gangs = map[string]bool{"default/train": true}
			},
			pods: 1},
		{name: "a pod in another namespace moves too",
			setup: func(c *cluster) { c.pod("p1", "n1", "100m", "128Mi", inNamespace("other")) }, pods: 1},
		{name: "a node whose NodePool is gone",
			nodeOpts: []nodeOpt{func(n *corev1.Node, claim *karpv1.NodeClaim) { claim.Labels[karpv1.NodePoolLabelKey] = "gone" }},
			blocked:  `its NodePool "gone" does not exist`},
		{name: "a node the catalog no longer prices",
			nodeOpts: []nodeOpt{func(n *corev1.Node, _ *karpv1.NodeClaim) { n.Labels[corev1.LabelInstanceTypeStable] = "m1.retired" }},
			unpriced: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, newPool("default"))
			c.node("n1", "default", odXLarge, tc.nodeOpts...)
			// A node Tailor does not manage (no NodeClaim) is neither a candidate nor blocked.
			c.Nodes = append(c.Nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "unmanaged"},
				Spec: corev1.NodeSpec{ProviderID: "fake:///us-west-2a/unmanaged"}})
			if tc.setup != nil {
				tc.setup(c)
			}
			cands, blocked := Candidates(c.State, tc.closed)
			if _, ok := blocked["unmanaged"]; ok {
				t.Errorf("a node without a NodeClaim was reported blocked: %q", blocked["unmanaged"])
			}
			var got *Candidate
			for _, cand := range cands {
				switch cand.Node.Name {
				case "n1":
					got = cand
				case "unmanaged":
					t.Errorf("a node without a NodeClaim is a candidate")
				}
			}
			if tc.blocked != "" {
				if got != nil {
					t.Fatalf("n1 is a candidate, want it blocked: %q", tc.blocked)
				}
				if !strings.Contains(blocked["n1"], tc.blocked) {
					t.Fatalf("n1 blocked because %q, want %q", blocked["n1"], tc.blocked)
				}
				return
			}
			if got == nil {
				t.Fatalf("n1 is not a candidate: %q", blocked["n1"])
			}
			if len(got.Pods) != tc.pods {
				t.Errorf("n1 has %d pods to move, want %d", len(got.Pods), tc.pods)
			}
			for _, p := range got.Pods {
				if p.Spec.NodeName != "n1" {
					t.Errorf("pod %s to move is bound to %q, want n1", p.Name, p.Spec.NodeName)
				}
			}
			if got.Priced == tc.unpriced {
				t.Errorf("Priced = %v, want %v", got.Priced, !tc.unpriced)
			}
			if !tc.unpriced && (got.InstanceType == nil || got.InstanceType.Name != odXLarge.instanceType || got.Price <= 0) {
				t.Errorf("n1 priced as %v at %v, want %s at its catalog price", got.InstanceType, got.Price, odXLarge.instanceType)
			}
		})
	}
}

// The assumed pod is copied onto its node: the State's pod stays unbound.
func TestCandidatesDoNotChangeTheState(t *testing.T) {
	c := newCluster(t, newPool("default"))
	c.node("n1", "default", odXLarge)
	p := c.pod("p1", "", "100m", "128Mi")
	c.Assumed[p.UID] = "n1"
	got := candidate(t, c.State, "n1")
	if len(got.Pods) != 1 || got.Pods[0].Spec.NodeName != "n1" {
		t.Fatalf("n1's pods = %v, want the assumed pod bound to n1", got.Pods)
	}
	if p.Spec.NodeName != "" {
		t.Errorf("the State's pod was bound to %q", p.Spec.NodeName)
	}
}

func TestCandidatesAreSortedByName(t *testing.T) {
	c := newCluster(t, newPool("default"))
	for _, n := range []string{"n3", "n1", "n2"} {
		c.node(n, "default", odXLarge)
	}
	cands, _ := Candidates(c.State, nil)
	var names []string
	for _, cand := range cands {
		names = append(names, cand.Node.Name)
	}
	if strings.Join(names, ",") != "n1,n2,n3" {
		t.Errorf("candidates = %v, want n1, n2, n3", names)
	}
}

// A pass reads the pods of the nodes Tailor manages alone: a node without a NodeClaim is no
// candidate, and its pods are left out of the index the candidates read (every pass built it over
// every pod before, on a cluster where Tailor launched nothing too).
func TestCandidatesIndexOnlyTheNodesOfClaims(t *testing.T) {
	c := newCluster(t, newPool("default"))
	c.node("n1", "default", odXLarge)
	c.Nodes = append(c.Nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "static"}})
	c.pod("on-n1", "n1", "100m", "128Mi")
	c.pod("on-static", "static", "100m", "128Mi")
	assumed := c.pod("assumed", "", "100m", "128Mi")
	c.Assumed[assumed.UID] = "n1"
	got := candidate(t, c.State, "n1")
	if len(got.Pods) != 2 {
		t.Fatalf("n1's pods = %d, want its bound and its assumed pod", len(got.Pods))
	}
	index := c.podsByNode(map[string]bool{"n1": true})
	if _, ok := index["static"]; ok || len(index["n1"]) != 2 {
		t.Errorf("the index of n1 alone = %v, want n1's two pods and no other node", index)
	}
	if all := c.podsByNode(nil); len(all["static"]) != 1 || len(all["n1"]) != 2 {
		t.Errorf("the index of every node = %v, want static's pod and n1's two", all)
	}
	if none := c.podsByNode(map[string]bool{}); len(none) != 0 {
		t.Errorf("the index of no node = %v, want it empty", none)
	}
}

// closedGate is a Gate with closed nodes that records what is reopened; reopenVanished asks it
// nothing else.
type closedGate struct {
	Gate
	closed   []string
	reopened []string
}

func (g *closedGate) Closed() []string      { return g.closed }
func (g *closedGate) Reopen(nodes []string) { g.reopened = append(g.reopened, nodes...) }

// A closed node that is gone is reopened; one still there stays closed; with none closed nothing
// is asked to reopen (the pass then indexes no node).
func TestReopenVanishedReopensOnlyGoneNodes(t *testing.T) {
	c := newCluster(t, newPool("default"))
	c.node("n1", "default", odXLarge)
	gate := &closedGate{closed: []string{"n1", "gone"}}
	(&Controller{opts: Options{Gate: gate}}).reopenVanished(c.State)
	if strings.Join(gate.reopened, ",") != "gone" {
		t.Errorf("reopened %v, want gone alone", gate.reopened)
	}
	gate = &closedGate{}
	(&Controller{opts: Options{Gate: gate}}).reopenVanished(c.State)
	if len(gate.reopened) != 0 {
		t.Errorf("with no node closed, reopened %v", gate.reopened)
	}
}
