package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group of NodePools and NodeClaims. Labels, annotations, taints and finalizers
// that Tailor owns live under the same domain, as in Karpenter.
const Group = "karpenter.sh"

var (
	// SchemeGroupVersion is karpenter.sh/v1.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1"}
	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds NodePool, NodeClaim and their lists to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource returns the group-qualified resource, e.g. Resource("nodeclaims").
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&NodePool{}, &NodePoolList{},
		&NodeClaim{}, &NodeClaimList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
