package aws_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

// A NodePool whose nodeClassRef names another kind or group of node class is not ready, with the
// field named, rather than an error that would stop the plans of every other pool.
func TestForeignNodeClassRefIsNotReady(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	for _, tc := range []struct{ name, group, kind, field string }{
		{name: "another kind", group: "karpenter.k8s.aws", kind: "AKSNodeClass", field: `kind "AKSNodeClass"`},
		{name: "another group", group: "karpenter.azure.com", kind: "EC2NodeClass", field: `group "karpenter.azure.com"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := pool()
			np.Spec.Template.Spec.NodeClassRef.Group, np.Spec.Template.Spec.NodeClassRef.Kind = tc.group, tc.kind
			_, err := e.provider.InstanceTypes(context.Background(), np)
			nr := cloud.AsNodeClassNotReady(err)
			if nr == nil {
				t.Fatalf("InstanceTypes: %v; want a NodeClassNotReadyError", err)
			}
			if nr.Reason != "NodeClassInvalid" || !strings.Contains(nr.Message, "spec.template.spec.nodeClassRef") || !strings.Contains(nr.Message, tc.field) {
				t.Errorf("not ready as %s: %s; want NodeClassInvalid naming spec.template.spec.nodeClassRef and %s", nr.Reason, nr.Message, tc.field)
			}
		})
	}
	if _, err := e.provider.InstanceTypes(context.Background(), pool()); err != nil {
		t.Errorf("the EC2NodeClass pool: %v", err)
	}
}
