package apis_test

import (
	"testing"

	"github.com/tailor-sh/tailor/manifests/crds"
)

const provisioningRequests = "provisioningrequests.autoscaling.x-k8s.io"

func TestCRDs(t *testing.T) {
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"nodepools.karpenter.sh":           {"NodeClass", "Nodes", "Ready", "Age", "Weight", "CPU", "Memory"},
		"nodeclaims.karpenter.sh":          {"Type", "Capacity", "Zone", "Node", "Ready", "Age"},
		"ec2nodeclasses.karpenter.k8s.aws": {"Ready", "Age", "Role"},
		// Cluster Autoscaler's API: namespaced, as upstream, and outside Karpenter's category.
		provisioningRequests: {"Class", "Accepted", "Provisioned", "Failed", "Age"},
	}
	if len(all) != len(want) {
		t.Fatalf("got %d CRDs, want %d", len(all), len(want))
	}
	for _, crd := range all {
		columns, ok := want[crd.Name]
		if !ok {
			t.Errorf("unexpected CRD %s", crd.Name)
			continue
		}
		switch {
		case crd.Name == provisioningRequests:
			if crd.Spec.Scope != "Namespaced" || len(crd.Spec.Names.Categories) != 0 {
				t.Errorf("%s: scope %s, categories %v; want Namespaced and none, as upstream", crd.Name, crd.Spec.Scope, crd.Spec.Names.Categories)
			}
		case crd.Spec.Scope != "Cluster":
			t.Errorf("%s: scope %s, want Cluster", crd.Name, crd.Spec.Scope)
		case len(crd.Spec.Names.Categories) != 1 || crd.Spec.Names.Categories[0] != "karpenter":
			t.Errorf("%s: categories %v, want [karpenter]", crd.Name, crd.Spec.Names.Categories)
		}
		v := crd.Spec.Versions[0]
		if v.Name != "v1" || !v.Served || !v.Storage || v.Subresources == nil || v.Subresources.Status == nil {
			t.Errorf("%s: version %s served=%v storage=%v, status subresource %v", crd.Name, v.Name, v.Served, v.Storage, v.Subresources)
		}
		have := map[string]bool{}
		for _, c := range v.AdditionalPrinterColumns {
			have[c.Name] = true
		}
		for _, c := range columns {
			if !have[c] {
				t.Errorf("%s: no printer column %s", crd.Name, c)
			}
		}
	}
	// admitters also runs the API server's own CRD validation (structural schema, CEL cost).
	admitters(t)
}
