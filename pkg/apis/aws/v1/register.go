package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group of EC2NodeClass and the domain of the AWS node labels.
const Group = "karpenter.k8s.aws"

var (
	// SchemeGroupVersion is karpenter.k8s.aws/v1.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1"}
	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds EC2NodeClass and EC2NodeClassList to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource returns the group-qualified resource, e.g. Resource("ec2nodeclasses").
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &EC2NodeClass{}, &EC2NodeClassList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
