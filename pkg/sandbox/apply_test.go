package sandbox

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/restmapper"
	clienttesting "k8s.io/client-go/testing"
)

func crd(kind, plural, scope string, established bool, served ...string) *unstructured.Unstructured {
	var versions []any
	for _, v := range served {
		versions = append(versions, map[string]any{"name": v, "served": true})
	}
	versions = append(versions, map[string]any{"name": "v0", "served": false})
	status := "False"
	if established {
		status = "True"
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + ".karpenter.sh"},
		"spec": map[string]any{"group": "karpenter.sh", "scope": scope, "versions": versions,
			"names": map[string]any{"kind": kind, "plural": plural}},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Established", "status": status}}},
	}}
}

// A kind discovery leaves out is applied where its Established CRD says it is served, at once;
// a CRD not Established yet, or not serving the version, is waited for; a kind no CRD defines
// is no kind at all.
func TestRESTMappingReadsAnEstablishedCRDThatDiscoveryLeavesOut(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{crdResource: "CustomResourceDefinitionList"},
		crd("NodePool", "nodepools", "Cluster", true, "v1"),
		crd("NodeOverlay", "nodeoverlays", "Cluster", false, "v1"),
		crd("Budget", "budgets", "Namespaced", true, "v1"))
	// Discovery that knows of none of them, as a loaded API server's did for a minute.
	core := &metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod", Namespaced: true}}}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(&fakediscovery.FakeDiscovery{
		Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{core}}}))
	ctx := context.Background()

	began := time.Now()
	m, err := restMapping(ctx, mapper, dyn, schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodePool"})
	if err != nil || m.Resource.Resource != "nodepools" || m.Scope.Name() != meta.RESTScopeNameRoot {
		t.Fatalf("NodePool maps to %+v, %v; want nodepools, cluster-scoped", m, err)
	}
	if waited := time.Since(began); waited > unknownKindWait {
		t.Errorf("the mapping took %v: it should not wait on discovery", waited)
	}
	if m, _ := crdMapping(ctx, dyn, schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "Budget"}); m == nil || m.Scope.Name() != meta.RESTScopeNameNamespace {
		t.Errorf("Budget maps to %+v; want a namespaced mapping", m)
	}
	for _, tc := range []struct {
		gvk         schema.GroupVersionKind
		wantDefined bool
	}{
		{schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodeOverlay"}, true},
		{schema.GroupVersionKind{Group: "karpenter.sh", Version: "v0", Kind: "NodePool"}, true},
		{schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodePol"}, false},
	} {
		if m, defined := crdMapping(ctx, dyn, tc.gvk); m != nil || defined != tc.wantDefined {
			t.Errorf("%v: mapping %+v, defined %v; want none, defined %v", tc.gvk, m, defined, tc.wantDefined)
		}
	}
	// A misspelt kind fails once unknownKindWait has passed.
	if _, err := restMapping(ctx, mapper, dyn, schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodePol"}); !meta.IsNoMatchError(err) {
		t.Errorf("a kind no CRD defines: %v, want no match", err)
	}
}
