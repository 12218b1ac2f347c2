package apis_test

import "testing"

const minimalNodeClaim = `
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: default-abcde}
spec:
  requirements:
    - {key: karpenter.sh/nodepool, operator: In, values: [default]}
    - {key: node.kubernetes.io/instance-type, operator: In, values: [m6i.large, m7i.large], minValues: 2}
  resources: {requests: {cpu: 1500m, memory: 2Gi, pods: "3"}}
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
`

func TestNodeClaimValidation(t *testing.T) {
	nc := admitters(t)["NodeClaim"]
	obj := fromYAML(t, minimalNodeClaim)
	if errs := nc.admit(obj, nil); len(errs) > 0 {
		t.Fatalf("a NodeClaim may require karpenter.sh/nodepool: %v", errs.ToAggregate())
	}
	spec := obj["spec"].(map[string]interface{})
	if spec["expireAfter"] != "720h" {
		t.Fatalf("expireAfter default: %v", spec["expireAfter"])
	}

	changed := withPatch(t, obj, `spec: {nodeClassRef: {name: other}}`)
	expectRefused(t, nc.admit(changed, obj), "spec", "spec is immutable")

	status := withPatch(t, obj, `status: {nodeName: ip-10-0-0-1, providerID: "aws:///us-west-2a/i-0123"}`)
	if errs := nc.admit(status, obj); len(errs) > 0 {
		t.Fatalf("status changes must be allowed: %v", errs.ToAggregate())
	}

	expectRefused(t, nc.admit(withPatch(t, obj, `spec: {requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [preemptible]}]}`), nil),
		"spec.requirements[0].values", "'spot', 'on-demand' or 'reserved'")
	expectRefused(t, nc.admit(withPatch(t, obj, `spec: {nodeClassRef: {kind: ""}}`), nil),
		"spec.nodeClassRef.kind", "kind may not be empty")
}

func TestNodeClaimStatusConditions(t *testing.T) {
	nc := admitters(t)["NodeClaim"]
	obj := withPatch(t, fromYAML(t, minimalNodeClaim), `
status:
  conditions:
    - {type: Launched, status: "True", reason: Launched, message: "", lastTransitionTime: "2026-01-01T00:00:00Z"}
    - {type: Ready, status: Unknown, reason: AwaitingReconciliation, message: "Registered is not known yet", lastTransitionTime: "2026-01-01T00:00:00Z"}
`)
	if errs := nc.admit(obj, nil); len(errs) > 0 {
		t.Fatalf("conditions as SetCondition writes them must be admitted: %v", errs.ToAggregate())
	}
}
