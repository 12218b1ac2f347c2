package nodeclass

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

func TestNeedsRestamp(t *testing.T) {
	claim := func(class string, annotations map[string]string, mutate ...func(*karpv1.NodeClaim)) *karpv1.NodeClaim {
		c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: annotations},
			Spec: karpv1.NodeClaimSpec{NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: class}}}
		for _, m := range mutate {
			m(c)
		}
		return c
	}
	karpenters := map[string]string{awsv1.AnnotationEC2NodeClassHash: "123", awsv1.AnnotationEC2NodeClassHashVersion: "v4"}
	for _, tc := range []struct {
		name  string
		claim *karpv1.NodeClaim
		want  bool
	}{
		{"Karpenter's version", claim("default", karpenters), true},
		{"already current", claim("default", map[string]string{awsv1.AnnotationEC2NodeClassHashVersion: "tailor-v1"}), false},
		{"not launched yet: no version", claim("default", nil), false},
		{"another class", claim("other", karpenters), false},
		{"being deleted", claim("default", karpenters, func(c *karpv1.NodeClaim) { c.DeletionTimestamp = &metav1.Time{} }), false},
		{"drifted keeps its hash", claim("default", karpenters, func(c *karpv1.NodeClaim) {
			c.SetCondition(karpv1.ConditionTypeDrifted, metav1.ConditionTrue, "NodeClassDrift", "", metav1.Now().Time)
		}), false},
	} {
		if got := needsRestamp(tc.claim, "default", "tailor-v1"); got != tc.want {
			t.Errorf("%s: needsRestamp = %v, want %v", tc.name, got, tc.want)
		}
	}
}
