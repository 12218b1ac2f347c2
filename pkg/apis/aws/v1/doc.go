// Package v1 is Tailor's copy of the AWS provider's karpenter.k8s.aws/v1 API: EC2NodeClass, plus
// the AWS well-known node labels shared by the fake cloud and the AWS provider.
//
// Fields, defaults and validation follow aws/karpenter-provider-aws so that EC2NodeClass manifests
// written for Karpenter apply unchanged. Validation is in kubebuilder markers and CEL rules that
// end up in manifests/crds.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.k8s.aws
// +groupGoName=AWS
package v1
