package disruption

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// replicaOf labels a pod as a Deployment's replica would be: the same labels as its siblings.
func replicaOf(app string) podOpt {
	return func(p *corev1.Pod) { p.Labels = map[string]string{"app": app} }
}

func TestTwinsAreNodesThatDifferOnlyInNames(t *testing.T) {
	c := newCluster(t, newPool("default"))
	for _, name := range []string{"a", "b"} {
		c.node(name, "default", od2XLarge)
		c.pod(name+"-web", name, "1", "1Gi", replicaOf("web"))
	}
	c.node("c", "default", od2XLarge)
	c.pod("c-web", "c", "1", "1Gi", replicaOf("api"))
	c.node("d", "default", od2XLarge, nodeTainted(corev1.Taint{Key: "team", Value: "x", Effect: corev1.TaintEffectNoSchedule}))
	c.pod("d-web", "d", "1", "1Gi", replicaOf("web"))
	c.node("e", "default", od2XLarge)
	withClaim := c.pod("e-web", "e", "1", "1Gi", replicaOf("web"))
	withClaim.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-e"}}}}

	cands, _ := Candidates(c.State, nil)
	shape := map[string]string{}
	for _, cand := range cands {
		s, ok := shapeOf(cand)
		if !ok {
			shape[cand.Node.Name] = "none"
			continue
		}
		shape[cand.Node.Name] = fmt.Sprintf("%x", s[:4])
	}
	if shape["a"] != shape["b"] {
		t.Errorf("a and b differ only in their names and their pods', yet have shapes %s and %s", shape["a"], shape["b"])
	}
	for _, other := range []string{"c", "d"} {
		if shape[other] == shape["a"] {
			t.Errorf("%s (another app's pod, or a taint) has a's shape %s", other, shape["a"])
		}
	}
	if shape["e"] != "none" {
		t.Errorf("e holds a pod with a PersistentVolumeClaim, bound to its own volume, yet has shape %s", shape["e"])
	}
}

// Single-node consolidation over twelve nodes of three shapes, every simulation refused: three
// simulations, and every node told why, in its twin's words.
func TestSingleNodeSimulatesEachShapeOnce(t *testing.T) {
	c := newCluster(t, newPool("default", onDemandOnly()))
	zones := fake.Zones()
	for i := range 12 {
		name := fmt.Sprintf("node-%02d", i)
		c.node(name, "default", offering{"m6i.2xlarge", zones[i%3], "on-demand"})
		c.pod(name+"-a", name, "500m", "1Gi", replicaOf(fmt.Sprintf("app-%d", i%3)))
	}
	pl := &countingPlanner{Planner: testPlanner(t)}
	cands, _ := Candidates(c.State, nil)
	b, _, _ := poolBudgets(c.State, nil)
	d := &decider{state: c.State, probe: &prober{state: c.State, planner: refusingPlanner{pl}}, cands: cands, budgets: b,
		spotMin: 15, deadline: time.Now().Add(time.Minute), now: time.Now, unconsolidatable: map[string]string{}}
	if cmd := d.singleNode(context.Background()); cmd != nil {
		t.Fatalf("every simulation is refused, yet single-node consolidation found %s", describe(cmd))
	}
	if pl.plans != 3 {
		t.Errorf("%d simulations for 12 nodes of 3 shapes, want 3", pl.plans)
	}
	if len(d.unconsolidatable) != 12 {
		t.Fatalf("%d nodes told why they stay, want all 12: %v", len(d.unconsolidatable), d.unconsolidatable)
	}
	for i := 3; i < 12; i++ {
		name, twin := fmt.Sprintf("node-%02d", i), fmt.Sprintf("node-%02d", i%3)
		if d.unconsolidatable[name] != d.unconsolidatable[twin] {
			t.Errorf("%s is refused for %q, its twin %s for %q", name, d.unconsolidatable[name], twin, d.unconsolidatable[twin])
		}
	}
}
