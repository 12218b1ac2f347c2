package planner

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodeclaim"
)

func minValues(key string, op corev1.NodeSelectorOperator, n int, values ...string) poolOpt {
	return func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values, MinValues: &n})
	}
}

// distinct counts the values of key over a claim's options.
func distinct(pc *nodeclaim.Planned, key string) int { return nodeclaim.OptionValues(pc.Options, key) }

func TestPlanMinValues(t *testing.T) {
	family := awsv1.LabelInstanceFamily
	cases := []struct {
		name   string
		policy MinValuesPolicy
		pool   Pool
		pods   []*corev1.Pod
		// wantShort: the claim falls short (BestEffort) or the pods are refused (Strict).
		wantShort bool
		key       string
		atLeast   int
	}{
		{name: "small pods keep many families", pool: newPool("default", minValues(family, corev1.NodeSelectorOpExists, 5)),
			pods: pods(4, "500m", "1Gi"), key: family, atLeast: 5},
		{name: "fifty instance types and twelve families",
			pool: newPool("default", minValues(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpExists, 50), minValues(family, corev1.NodeSelectorOpExists, 12)),
			pods: pods(1, "100m", "128Mi"), key: family, atLeast: 12},
		{name: "zones", pool: newPool("default", minValues(corev1.LabelTopologyZone, corev1.NodeSelectorOpExists, 3)),
			pods: pods(2, "1", "2Gi"), key: corev1.LabelTopologyZone, atLeast: 3},
		{name: "a pod only GPU types hold cannot have twenty families, strict",
			pool: newPool("default", minValues(family, corev1.NodeSelectorOpExists, 20)),
			pods: []*corev1.Pod{newPod("gpu", "1", "2Gi", func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse("1")
			})}, wantShort: true},
		{name: "the same, best effort", policy: MinValuesBestEffort,
			pool: newPool("default", minValues(family, corev1.NodeSelectorOpExists, 20)),
			pods: []*corev1.Pod{newPod("gpu", "1", "2Gi", func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse("1")
			})}, wantShort: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pl := testPlanner(t)
			pl.SetMinValuesPolicy(tc.policy)
			defer pl.SetMinValuesPolicy(MinValuesStrict)
			plan := pl.Plan(context.Background(), Input{Pending: tc.pods, Pools: []Pool{tc.pool}})
			switch {
			case tc.wantShort && tc.policy != MinValuesBestEffort:
				if len(plan.Claims) != 0 || len(plan.Unplaceable) != len(tc.pods) {
					t.Fatalf("want every pod refused for minValues: %s", summary(plan))
				}
				if why := plan.Unplaceable[0].Reasons["default"]; !strings.Contains(why, "minValues") {
					t.Fatalf("reason does not name minValues: %q", why)
				}
			case tc.wantShort:
				if len(plan.Claims) != 1 || plan.Claims[0].MinValuesShort == "" {
					t.Fatalf("want one claim marked short of minValues: %s", summary(plan))
				}
				claim := nodeclaim.New(plan.Claims[0])
				if claim.Annotations[nodeclaim.MinValuesRelaxedAnnotationKey] != "true" {
					t.Fatalf("NodeClaim lacks %s: %v", nodeclaim.MinValuesRelaxedAnnotationKey, claim.Annotations)
				}
				for _, r := range claim.Spec.Requirements {
					if r.Key == family && (r.MinValues == nil || *r.MinValues > distinct(plan.Claims[0], family)) {
						t.Fatalf("the relaxed requirement still asks for %v values; the options have %d", r.MinValues, distinct(plan.Claims[0], family))
					}
				}
			default:
				if len(plan.Unplaceable) != 0 || len(plan.Claims) == 0 {
					t.Fatalf("want the pods placed: %s", summary(plan))
				}
				for _, pc := range plan.Claims {
					if n := distinct(pc, tc.key); n < tc.atLeast {
						t.Fatalf("claim has %d values of %s, want at least %d", n, tc.key, tc.atLeast)
					}
					if pc.MinValuesShort != "" {
						t.Fatalf("claim marked short: %s", pc.MinValuesShort)
					}
				}
			}
		})
	}
}
