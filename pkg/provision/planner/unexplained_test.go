package planner

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A pod whose reasons the caller does not read (a disruption probe's waiting pods) gets the short
// reason, and a pod of the same shape planned after it in the same plan, whose reasons are read,
// still gets the plugins' own words: the short reason is not remembered for it.
func TestUnexplainedPodsGetAShortReasonAndOthersTheirOwn(t *testing.T) {
	pl := testPlanner(t)
	pool := newPool("arm", requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64"))
	waiting := newPod("waiting", "1", "1Gi", nodeSelector(corev1.LabelArchStable, "amd64"))
	moved := newPod("moved", "1", "1Gi", nodeSelector(corev1.LabelArchStable, "amd64"))
	plan := pl.Plan(context.Background(), Input{Pending: []*corev1.Pod{waiting, moved}, Pools: []Pool{pool},
		First: map[types.UID]bool{waiting.UID: true}, Unexplained: map[types.UID]bool{waiting.UID: true}})
	if len(plan.Unplaceable) != 2 {
		t.Fatalf("want both pods unplaceable; got %s", summary(plan))
	}
	if why := reasonsOf(t, plan, waiting)["arm"]; why != notExplained {
		t.Errorf("the unexplained pod's reason is %q, want the short one", why)
	}
	if why := reasonsOf(t, plan, moved)["arm"]; !strings.Contains(why, "didn't match Pod's node affinity/selector") || !strings.Contains(why, "kubernetes.io/arch In [amd64]") {
		t.Errorf("the explained pod's reason is %q, want the plugins' words and the conflicting key", why)
	}
}

// A pod with a preference is weighed as a stricter shape of itself first; when no shape fits, its
// reasons are its own shape's, in the plugins' words, never the short reason of the shapes before.
func TestUnplaceablePodWithPreferencesIsExplainedInThePluginsWords(t *testing.T) {
	pl := testPlanner(t)
	pool := newPool("arm", requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64"))
	pod := newPod("prefers", "1", "1Gi", nodeSelector(corev1.LabelArchStable, "amd64"))
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
		Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}}}}}}}}
	plan := pl.Plan(context.Background(), Input{Pending: []*corev1.Pod{pod}, Pools: []Pool{pool}})
	why := reasonsOf(t, plan, pod)["arm"]
	if why == notExplained || !strings.Contains(why, "kubernetes.io/arch In [amd64]") {
		t.Errorf("the pod's reason is %q, want the plugins' words and the conflicting key", why)
	}
}

// A plan asked to stop at the first pod outside First that fits nowhere (a disruption probe)
// plans no pod after it, and that pod's reasons are the ones a whole plan gives it; a pod of
// First that fits nowhere does not stop it.
func TestPlanStopsAtTheFirstUnplaceablePodOutsideFirst(t *testing.T) {
	pl := testPlanner(t)
	pool := newPool("arm", requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64"))
	waiting := newPod("waiting", "3", "1Gi", nodeSelector(corev1.LabelArchStable, "amd64"))
	// Packing goes largest first: the evicted pod that fits nowhere comes before the small ones.
	evicted := newPod("evicted", "2", "1Gi", nodeSelector(corev1.LabelArchStable, "amd64"))
	small := pods(4, "100m", "128Mi")
	in := Input{Pending: append([]*corev1.Pod{waiting, evicted}, small...), Pools: []Pool{pool},
		First: map[types.UID]bool{waiting.UID: true}, Unexplained: map[types.UID]bool{waiting.UID: true}}
	whole := pl.Plan(context.Background(), in)
	in.StopAtUnplaceable = true
	stopped := pl.Plan(context.Background(), in)
	if len(whole.Claims) == 0 || len(whole.Unplaceable) != 2 {
		t.Fatalf("the whole plan should place the small pods and leave two unplaceable; got %s", summary(whole))
	}
	if len(stopped.Claims) != 0 || len(stopped.Unplaceable) != 2 || stopped.Unplaceable[1].Pod != evicted {
		t.Fatalf("the stopped plan should end at the evicted pod, after the waiting one, with no claim; got %s", summary(stopped))
	}
	if got, want := reasonsOf(t, stopped, evicted)["arm"], reasonsOf(t, whole, evicted)["arm"]; got != want || got == notExplained {
		t.Errorf("the evicted pod's reason is %q when the plan stops, %q in the whole plan; want the same, in the plugins' words", got, want)
	}
}
