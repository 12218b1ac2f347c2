package hash

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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

func TestStamp(t *testing.T) {
	np := pool()
	ann := Stamp(nil, np)
	if !Stamped(ann, np) {
		t.Fatalf("freshly stamped annotations %v are not current", ann)
	}
	np.Spec.Template.Labels["team"] = "b"
	if Stamped(ann, np) {
		t.Fatal("annotations still current after the template changed")
	}
	ann = Stamp(ann, np)
	ann[karpv1.NodePoolHashVersionAnnotationKey] = "v0"
	if Stamped(ann, np) {
		t.Fatal("annotations of another hash version count as current")
	}
}
