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
