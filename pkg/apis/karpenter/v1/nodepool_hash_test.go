package v1_test

import (
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

func pool() *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Labels = map[string]string{"team": "a"}
	np.Spec.Template.Annotations = map[string]string{"note": "x"}
	np.Spec.Template.Spec.Taints = []corev1.Taint{
		{Key: "a", Value: "1", Effect: corev1.TaintEffectNoSchedule},
		{Key: "b", Effect: corev1.TaintEffectNoExecute},
	}
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}},
	}
	np.Spec.Template.Spec.ExpireAfter = karpv1.NewNillableDuration(720 * time.Hour)
	return np
}

func TestHash(t *testing.T) {
	base := pool().Hash()
	if base == "" {
		t.Fatal("empty hash")
	}
	cases := []struct {
		name    string
		edit    func(np *karpv1.NodePool)
		changes bool
	}{
		{"nothing", func(*karpv1.NodePool) {}, false},
		{"label added", func(np *karpv1.NodePool) { np.Spec.Template.Labels["tier"] = "web" }, true},
		{"label value", func(np *karpv1.NodePool) { np.Spec.Template.Labels["team"] = "b" }, true},
		{"annotation", func(np *karpv1.NodePool) { np.Spec.Template.Annotations["note"] = "y" }, true},
		{"taint added", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Taints = append(np.Spec.Template.Spec.Taints, corev1.Taint{Key: "c", Effect: corev1.TaintEffectNoSchedule})
		}, true},
		{"taint effect", func(np *karpv1.NodePool) { np.Spec.Template.Spec.Taints[1].Effect = corev1.TaintEffectNoSchedule }, true},
		{"startup taint", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: "init", Effect: corev1.TaintEffectNoSchedule}}
		}, true},
		{"node class", func(np *karpv1.NodePool) { np.Spec.Template.Spec.NodeClassRef.Name = "other" }, true},
		{"taints reordered", func(np *karpv1.NodePool) {
			ts := np.Spec.Template.Spec.Taints
			np.Spec.Template.Spec.Taints = []corev1.Taint{ts[1], ts[0]}
		}, false},
		{"taint time added", func(np *karpv1.NodePool) {
			now := metav1.Now()
			np.Spec.Template.Spec.Taints[0].TimeAdded = &now
		}, false},
		{"requirements (requirements drift, not hash)", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Requirements[0].Values = []string{"on-demand"}
		}, false},
		{"expireAfter", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.ExpireAfter = karpv1.NewNillableDuration(time.Hour)
		}, false},
		{"terminationGracePeriod", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Minute}
		}, false},
		{"weight and limits", func(np *karpv1.NodePool) {
			w := int32(10)
			np.Spec.Weight = &w
			np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: *resourceOne()}
		}, false},
		{"the pool's own annotations", func(np *karpv1.NodePool) {
			np.Annotations = map[string]string{karpv1.NodePoolHashAnnotationKey: "123"}
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			np := pool()
			tc.edit(np)
			if got := np.Hash(); (got != base) != tc.changes {
				t.Fatalf("hash %s, base %s; want changed=%v", got, base, tc.changes)
			}
		})
	}
}

func TestEmptyEqualsMissing(t *testing.T) {
	a, b := pool(), pool()
	a.Spec.Template.Annotations = nil
	b.Spec.Template.Annotations = map[string]string{}
	a.Spec.Template.Spec.StartupTaints = nil
	b.Spec.Template.Spec.StartupTaints = []corev1.Taint{}
	if a.Hash() != b.Hash() {
		t.Fatal("an empty map or list hashes differently from a missing one")
	}
}

func resourceOne() *resource.Quantity { q := resource.MustParse("1"); return &q }

// BenchmarkHash: the drift controller hashes a pool on every look at one of its claims.
func BenchmarkHash(b *testing.B) {
	np := pool()
	for range 20 {
		np.Spec.Template.Spec.Taints = append(np.Spec.Template.Spec.Taints, corev1.Taint{Key: "k" + strconv.Itoa(len(np.Spec.Template.Spec.Taints)), Effect: corev1.TaintEffectNoSchedule})
	}
	start := time.Now()
	for b.Loop() {
		_ = np.Hash()
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "hashes/s")
}
