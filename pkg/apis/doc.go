// Package apis is the root of Tailor's API packages:
//
//   - karpenter/v1: karpenter.sh/v1 NodePool and NodeClaim, and the well-known labels, annotations,
//     taints and finalizers of the karpenter.sh domain.
//   - aws/v1: karpenter.k8s.aws/v1 EC2NodeClass and the AWS instance labels.
//
// Types carry kubebuilder and +genclient markers; hack/generate.sh turns them into deepcopy
// functions, the CRDs embedded by manifests/crds, and the clientset, listers and informers in
// pkg/generated. ForEvents is the one helper the generated code does not provide. The tests in
// this package run the CRDs through the API server's own defaulting and validation code, so they
// check what admission will really accept.
package apis
