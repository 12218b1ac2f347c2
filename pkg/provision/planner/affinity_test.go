package planner

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func labelled(app string) podOpt {
	return func(p *corev1.Pod) { p.Labels = map[string]string{"app": app} }
}

func hostnameTerm(app string) []corev1.PodAffinityTerm {
	return []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		TopologyKey:   corev1.LabelHostname,
	}}
}

// awayFrom requires the pod not to share a node with pods labelled app.
func awayFrom(app string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: hostnameTerm(app)}}
	}
}

// nextTo requires the pod to share a node with a pod labelled app.
func nextTo(app string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: hostnameTerm(app)}}
	}
}

// TestPlanInterPodAffinity checks that pods placed on claims opened earlier in the same plan count
// for the inter-pod affinity of the pods after them, in both directions. The pods are listed
// biggest first, the order the planner places them in.
func TestPlanInterPodAffinity(t *testing.T) {
	cases := []struct {
		name    string
		pending []*corev1.Pod
		// claims lists the pods of each claim, names joined with "+", in the order claims open.
		claims []string
	}{
		{name: "replicas that avoid each other get a node each", pending: []*corev1.Pod{
			newPod("r1", "1", "1Gi", labelled("x"), awayFrom("x")),
			newPod("r2", "1", "1Gi", labelled("x"), awayFrom("x")),
			newPod("r3", "1", "1Gi", labelled("x"), awayFrom("x")),
		}, claims: []string{"r1", "r2", "r3"}},
		{name: "a pod placed earlier keeps others away", pending: []*corev1.Pod{
			newPod("loner", "2", "1Gi", awayFrom("web")),
			newPod("web", "1", "1Gi", labelled("web")),
		}, claims: []string{"loner", "web"}},
		{name: "a pod joins the one it must run next to", pending: []*corev1.Pod{
			newPod("db", "2", "1Gi", labelled("db")),
			newPod("app", "1", "1Gi", nextTo("db")),
		}, claims: []string{"db+app"}},
		{name: "unrelated pods still share", pending: []*corev1.Pod{
			newPod("a", "2", "1Gi", labelled("x"), awayFrom("x")),
			newPod("b", "1", "1Gi", labelled("y"), awayFrom("y")),
		}, claims: []string{"a+b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := testPlanner(t).Plan(context.Background(), Input{Pending: tc.pending, Pools: []Pool{newPool("default")}})
			var got []string
			for _, pc := range plan.Claims {
				var names []string
				for _, p := range pc.Pods {
					names = append(names, p.Name)
				}
				got = append(got, strings.Join(names, "+"))
			}
			if !slices.Equal(got, tc.claims) || len(plan.Unplaceable) != 0 {
				t.Errorf("claims hold %v, want %v; %s", got, tc.claims, summary(plan))
			}
		})
	}
}
