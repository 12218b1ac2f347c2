// Package v1 is Tailor's copy of Cluster Autoscaler's autoscaling.x-k8s.io/v1 API:
// ProvisioningRequest, which batch systems such as Kueue create to ask for capacity for a group of
// pods before they admit a job.
//
// The types have the JSON shape of the upstream API field for field, so a request written for
// Cluster Autoscaler applies unchanged, and the CRD Tailor ships validates as upstream's does
// (immutable spec, 1 to 32 pod sets, count at least 1). Tailor keeps its own copy because the
// upstream Go module is not one Tailor can depend on; only the v1 version is served.
//
// +kubebuilder:object:generate=true
// +groupName=autoscaling.x-k8s.io
package v1
