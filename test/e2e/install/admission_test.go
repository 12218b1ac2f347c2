package install

import (
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// Every manifest in examples/ is accepted by a real API server, and a table of bad NodePools is
// refused at admission with the offending field named. One cluster serves all the cases.
func TestAdmission(t *testing.T) {
	e := env.New(t)
	t.Run("examples are accepted", func(t *testing.T) {
		if err := sandbox.ApplyFiles(e.Ctx, e.Cluster.Config, []string{env.RepoPath("examples")}, nil); err != nil {
			t.Fatalf("applying examples/: %v", err)
		}
	})

	dyn, err := dynamic.NewForConfig(e.Cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	nodePools := dyn.Resource(schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"})
	const base = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: bad}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: %s
  disruption: %s
`
	okReqs := `[{key: kubernetes.io/os, operator: In, values: [linux]}]`
	okDisruption := `{consolidateAfter: 1m}`
	cases := []struct {
		name, requirements, disruption string
		// field and message must both appear in the API server's answer.
		field, message string
	}{
		{"Gt with a non-integer", `[{key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["five"]}]`, okDisruption,
			"spec.template.spec.requirements[0].values", "single positive integer"},
		{"unknown capacity type", `[{key: karpenter.sh/capacity-type, operator: In, values: [spot, cheap]}]`, okDisruption,
			"spec.template.spec.requirements[0].values", "spot"},
		{"budget nodes 110%", okReqs, `{budgets: [{nodes: "110%"}]}`,
			"spec.disruption.budgets[0].nodes", "110%"},
		{"consolidateAfter abc", okReqs, `{consolidateAfter: abc}`,
			"spec.disruption.consolidateAfter", "abc"},
		{"requirement on kubernetes.io/hostname", `[{key: kubernetes.io/hostname, operator: In, values: [node-1]}]`, okDisruption,
			"spec.template.spec.requirements[0].key", "restricted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			raw := []byte(fmt.Sprintf(base, tc.requirements, tc.disruption))
			if err := yaml.Unmarshal(raw, &obj.Object); err != nil {
				t.Fatalf("bad test manifest: %v", err)
			}
			_, err := nodePools.Create(e.Ctx, obj, metav1.CreateOptions{})
			if err == nil {
				_ = nodePools.Delete(e.Ctx, "bad", metav1.DeleteOptions{})
				t.Fatalf("NodePool with %s was accepted", tc.name)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.field) || !strings.Contains(msg, tc.message) {
				t.Fatalf("error does not name %s with %q:\n%s", tc.field, tc.message, msg)
			}
		})
	}
}
