package gangdomain

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

// The domains of a key are every value capacity can carry for it: the nodes' labels, the zones
// of the offerings (which carry the zone as a field, not a label), the instance types' and
// offerings' labels, and the NodePool template's labels; once each, sorted.
func TestDomainsAreEveryValueCapacityCanCarry(t *testing.T) {
	pool := &karpv1.NodePool{}
	pool.Spec.Template.Labels = map[string]string{"rack": "r9"}
	in := planner.Input{
		Nodes: []*corev1.Node{
			{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{corev1.LabelTopologyZone: "zone-c", "rack": "r1"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: map[string]string{"rack": "r1"}}},
		},
		Pools: []planner.Pool{{NodePool: pool, InstanceTypes: []*cloud.InstanceType{{
			Name:      "big",
			Labels:    map[string]string{"rack": "r2"},
			Offerings: []cloud.Offering{{Zone: "zone-a"}, {Zone: "zone-b", Labels: map[string]string{"rack": "r3"}}, {Zone: "zone-a"}},
		}}}},
	}
	if got, want := Domains(in, corev1.LabelTopologyZone), []string{"zone-a", "zone-b", "zone-c"}; !slices.Equal(got, want) {
		t.Errorf("zones: got %v, want %v", got, want)
	}
	if got, want := Domains(in, "rack"), []string{"r1", "r2", "r3", "r9"}; !slices.Equal(got, want) {
		t.Errorf("racks: got %v, want %v", got, want)
	}
	if got := Domains(in, "absent"); len(got) != 0 {
		t.Errorf("a key nothing carries: got %v, want none", got)
	}
}

// Pinning adds the requirement to every term of the pod's required node affinity, since the
// terms are ORed and any one left without it would let the pod out of the domain; the pod
// itself, an informer's, is left as it was.
func TestPinnedRestrictsEveryTermOfACopy(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.PodSpec{Affinity: &corev1.Affinity{
		NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}}},
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}},
			}}}}}}
	got := Pinned(pod, corev1.LabelTopologyZone, "zone-b")
	want := corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-b"}}
	for i, term := range got.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if n := len(term.MatchExpressions); n != 2 || term.MatchExpressions[1].Key != want.Key || term.MatchExpressions[1].Values[0] != "zone-b" {
			t.Errorf("term %d: %v, want its own requirement and %v", i, term.MatchExpressions, want)
		}
	}
	for i, term := range pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if len(term.MatchExpressions) != 1 {
			t.Errorf("the informer's pod changed: term %d is %v", i, term.MatchExpressions)
		}
	}
	bare := Pinned(&corev1.Pod{}, "rack", "r1")
	if terms := bare.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms; len(terms) != 1 ||
		len(terms[0].MatchExpressions) != 1 || terms[0].MatchExpressions[0].Key != "rack" {
		t.Errorf("a pod without affinity: terms %v, want one term requiring rack r1", terms)
	}
}
