package apis_test

import "testing"

// kueueRequest is a ProvisioningRequest as Kueue's provisioning admission check writes it: one pod
// set per PodTemplate it created, the class named in its ProvisioningRequestConfig.
const kueueRequest = `
apiVersion: autoscaling.x-k8s.io/v1
kind: ProvisioningRequest
metadata: {name: job-train-1, namespace: team-a}
spec:
  provisioningClassName: best-effort-atomic-scale-up.autoscaling.x-k8s.io
  podSets:
    - {podTemplateRef: {name: ppt-job-train-1-main}, count: 4}
  parameters: {ValidUntilSeconds: "3600"}
`

func TestProvisioningRequestValidation(t *testing.T) {
	pr := admitters(t)["ProvisioningRequest"]
	obj := fromYAML(t, kueueRequest)
	if errs := pr.admit(obj, nil); len(errs) > 0 {
		t.Fatalf("Kueue's request must be admitted: %v", errs.ToAggregate())
	}
	if unknown := pr.unknownFields(fromYAML(t, kueueRequest)); len(unknown) > 0 {
		t.Fatalf("fields of the upstream shape would be pruned: %v", unknown)
	}
	expectRefused(t, pr.admit(withPatch(t, obj, `spec: {podSets: [{podTemplateRef: {name: t}, count: 0}]}`), nil),
		"spec.podSets[0].count", "should be greater than or equal to 1")
	expectRefused(t, pr.admit(withPatch(t, obj, `spec: {podSets: []}`), nil), "spec.podSets", "should have at least 1 items")
	expectRefused(t, pr.admit(withPatch(t, obj, `spec: {podSets: [{podTemplateRef: {name: t}, count: 5}]}`), obj),
		"spec.podSets", "Value is immutable")
	expectRefused(t, pr.admit(withPatch(t, obj, `spec: {provisioningClassName: check-capacity.autoscaling.x-k8s.io}`), obj),
		"spec.provisioningClassName", "Value is immutable")
	status := withPatch(t, obj, `
status:
  conditions:
    - {type: Provisioned, status: "True", reason: CapacityIsProvisioned, message: "Capacity is found in the cluster", lastTransitionTime: "2026-01-01T00:00:00Z"}
`)
	if errs := pr.admit(status, obj); len(errs) > 0 {
		t.Fatalf("status changes must be allowed: %v", errs.ToAggregate())
	}
}
