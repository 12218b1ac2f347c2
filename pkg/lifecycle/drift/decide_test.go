package drift

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/nodepool/hash"
)

func req(key string, op corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
}

func testPool(reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Labels = map[string]string{"team": "a"}
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = reqs
	return np
}

// launchedClaim is a spot m5.large in zone a made from pool as it is now.
func launchedClaim(pool *karpv1.NodePool) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{
		Name:        "default-abc",
		Annotations: hash.Stamp(nil, pool),
		Labels: map[string]string{
			karpv1.NodePoolLabelKey: pool.Name, "team": "a", "example.com/tier": "web",
			corev1.LabelInstanceTypeStable: "m5.large", corev1.LabelTopologyZone: "zone-a", karpv1.CapacityTypeLabelKey: "spot",
			corev1.LabelArchStable: "amd64",
		},
	}}
}

func TestStatic(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(pool *karpv1.NodePool, claim *karpv1.NodeClaim)
		drift bool
	}{
		{"unchanged", func(*karpv1.NodePool, *karpv1.NodeClaim) {}, false},
		{"template label changed", func(p *karpv1.NodePool, _ *karpv1.NodeClaim) { p.Spec.Template.Labels["team"] = "b" }, true},
		{"taint added", func(p *karpv1.NodePool, _ *karpv1.NodeClaim) {
			p.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectNoSchedule}}
		}, true},
		{"node class renamed", func(p *karpv1.NodePool, _ *karpv1.NodeClaim) { p.Spec.Template.Spec.NodeClassRef.Name = "gpu" }, true},
		{"requirements changed: not static", func(p *karpv1.NodePool, _ *karpv1.NodeClaim) {
			p.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{req("a", corev1.NodeSelectorOpExists)}
		}, false},
		{"claim has no hash", func(p *karpv1.NodePool, c *karpv1.NodeClaim) {
			c.Annotations = nil
			p.Spec.Template.Labels["team"] = "b"
		}, false},
		{"claim hashed by another version: re-stamped, not drifted", func(p *karpv1.NodePool, c *karpv1.NodeClaim) {
			c.Annotations[karpv1.NodePoolHashVersionAnnotationKey] = "v0"
			p.Spec.Template.Labels["team"] = "b"
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pool := testPool()
			claim := launchedClaim(pool)
			tc.edit(pool, claim)
			f := Static(claim, pool)
			if (f != nil) != tc.drift {
				t.Fatalf("Static = %+v, want drift=%v", f, tc.drift)
			}
			if f != nil && f.Reason != NodePoolDrifted {
				t.Fatalf("reason %s, want %s", f.Reason, NodePoolDrifted)
			}
		})
	}
}

func TestRequirements(t *testing.T) {
	cases := []struct {
		name  string
		reqs  []karpv1.NodeSelectorRequirementWithMinValues
		drift bool
	}{
		{"no requirements", nil, false},
		{"capacity type still allowed", []karpv1.NodeSelectorRequirementWithMinValues{
			req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot", "on-demand")}, false},
		{"capacity type no longer allowed", []karpv1.NodeSelectorRequirementWithMinValues{
			req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand")}, true},
		{"zone excluded", []karpv1.NodeSelectorRequirementWithMinValues{
			req(corev1.LabelTopologyZone, corev1.NodeSelectorOpNotIn, "zone-a")}, true},
		{"deprecated alias normalized", []karpv1.NodeSelectorRequirementWithMinValues{
			req("beta.kubernetes.io/arch", corev1.NodeSelectorOpIn, "arm64")}, true},
		{"custom label value changed", []karpv1.NodeSelectorRequirementWithMinValues{
			req("example.com/tier", corev1.NodeSelectorOpIn, "batch")}, true},
		{"custom label the node lacks", []karpv1.NodeSelectorRequirementWithMinValues{
			req("example.com/gpu", corev1.NodeSelectorOpIn, "yes")}, true},
		{"custom label the node lacks, NotIn", []karpv1.NodeSelectorRequirementWithMinValues{
			req("example.com/gpu", corev1.NodeSelectorOpNotIn, "yes")}, false},
		{"well-known label the node lacks", []karpv1.NodeSelectorRequirementWithMinValues{
			req("karpenter.k8s.aws/instance-generation", corev1.NodeSelectorOpGt, "4")}, false},
		{"Gt on a custom label the node lacks", []karpv1.NodeSelectorRequirementWithMinValues{
			req("example.com/gen", corev1.NodeSelectorOpGt, "4")}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pool := testPool(tc.reqs...)
			f := Requirements(launchedClaim(pool), pool)
			if (f != nil) != tc.drift {
				t.Fatalf("Requirements = %+v, want drift=%v", f, tc.drift)
			}
			if f != nil && f.Reason != RequirementsDrifted {
				t.Fatalf("reason %s, want %s", f.Reason, RequirementsDrifted)
			}
		})
	}
}

func TestInstanceType(t *testing.T) {
	pool := testPool()
	claim := launchedClaim(pool)
	offered := []*cloud.InstanceType{{Name: "m5.large"}, {Name: "m5.xlarge"}}
	if f := InstanceType(claim, pool, offered); f != nil {
		t.Fatalf("drifted with its type offered: %+v", f)
	}
	if f := InstanceType(claim, pool, offered[1:]); f == nil || f.Reason != InstanceTypeNotFound {
		t.Fatalf("InstanceType = %+v, want %s", f, InstanceTypeNotFound)
	}
	// An empty catalog is the cloud not answering, not every type gone.
	if f := InstanceType(claim, pool, nil); f != nil {
		t.Fatalf("drifted against an empty catalog: %+v", f)
	}
}
