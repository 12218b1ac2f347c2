// Package v1 is Tailor's copy of Karpenter's karpenter.sh/v1 API: NodePool and NodeClaim.
//
// The types follow Karpenter field for field (names, JSON tags, defaults and validation) so that
// manifests written for Karpenter apply unchanged. Validation lives in kubebuilder markers and CEL
// rules that controller-gen turns into the CRDs under manifests/crds, so the API server refuses a
// bad object at admission and names the offending field; there is no webhook.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1
