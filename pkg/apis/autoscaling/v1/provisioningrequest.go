package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProvisioningRequest asks for capacity for groups of pods, each a PodTemplate and a count, before
// the pods exist. The class says what is asked: whether the pods fit the cluster as it is
// (check-capacity) or that capacity for all of them be launched, or none (best-effort atomic
// scale-up). The autoscaler answers in the status conditions, and books the capacity it found for
// the pods that later consume the request.
//
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=provisioningrequests,scope=Namespaced,shortName=provreq;provreqs
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Class",type="string",JSONPath=".spec.provisioningClassName",description=""
// +kubebuilder:printcolumn:name="Accepted",type="string",JSONPath=".status.conditions[?(@.type==\"Accepted\")].status",description=""
// +kubebuilder:printcolumn:name="Provisioned",type="string",JSONPath=".status.conditions[?(@.type==\"Provisioned\")].status",description=""
// +kubebuilder:printcolumn:name="Failed",type="string",JSONPath=".status.conditions[?(@.type==\"Failed\")].status",description=""
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
type ProvisioningRequest struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is what is asked for. It is immutable: to change a request, delete it and create
	// another.
	// +required
	Spec ProvisioningRequestSpec `json:"spec"`
	// Status is the autoscaler's answer.
	// +optional
	Status ProvisioningRequestStatus `json:"status,omitempty"`
}

// ProvisioningRequestSpec is the pods capacity is asked for, and how.
type ProvisioningRequestSpec struct {
	// PodSets are the groups of pods to find or launch capacity for.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	// +listType=atomic
	// +required
	PodSets []PodSet `json:"podSets"`
	// ProvisioningClassName says what kind of answer is wanted. Tailor serves
	// check-capacity.autoscaling.x-k8s.io (do the pods fit the nodes there are and those in
	// flight, launching nothing) and best-effort-atomic-scale-up.autoscaling.x-k8s.io (launch
	// capacity for all the pods, or none). Requests of other classes are left to whatever serves
	// them.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:MaxLength=253
	// +required
	ProvisioningClassName string `json:"provisioningClassName"`
	// Parameters are further settings a class may read. Tailor's classes read none.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	// +kubebuilder:validation:MaxProperties=100
	// +optional
	Parameters map[string]Parameter `json:"parameters"`
}

// Parameter is one class parameter's value, at most 255 characters.
// +kubebuilder:validation:MaxLength=255
type Parameter string

// PodSet is Count pods shaped as a PodTemplate of the request's namespace.
type PodSet struct {
	// PodTemplateRef names the PodTemplate, in the request's namespace, of the pods that will
	// consume the request. What the scheduler reads (requests, node selector, affinity,
	// tolerations) must be what those pods will have, or the capacity found may not hold them.
	// +required
	PodTemplateRef Reference `json:"podTemplateRef"`
	// Count is how many such pods there will be.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Format=int32
	// +required
	Count int32 `json:"count"`
}

// Reference names an object in the request's namespace.
type Reference struct {
	// Name of the object.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name,omitempty"`
}

// ProvisioningRequestStatus is the autoscaler's answer to a request.
type ProvisioningRequestStatus struct {
	// Conditions say where the request stands: Accepted, Provisioned, Failed, BookingExpired and
	// CapacityRevoked.
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions" patchStrategy:"merge" patchMergeKey:"type"`
	// ProvisioningClassDetails are further values a class reports. Tailor's classes report none.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	ProvisioningClassDetails map[string]Detail `json:"provisioningClassDetails"`
}

// Detail is one class detail's value, at most 32768 characters.
// +kubebuilder:validation:MaxLength=32768
type Detail string

// ProvisioningRequestList is a list of ProvisioningRequests.
// +kubebuilder:object:root=true
type ProvisioningRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []ProvisioningRequest `json:"items"`
}

// The condition types of a request's status, as Cluster Autoscaler names them.
const (
	// Accepted: the autoscaler took the request on.
	Accepted = "Accepted"
	// Provisioned: the capacity was found (check-capacity) or launched and ready (atomic
	// scale-up), and is booked for the request's pods.
	Provisioned = "Provisioned"
	// Failed: the request cannot be met; the reason and message say why.
	Failed = "Failed"
	// BookingExpired: the booking time passed since Provisioned; the capacity is no longer kept.
	BookingExpired = "BookingExpired"
	// CapacityRevoked: capacity that was provisioned is no longer there.
	CapacityRevoked = "CapacityRevoked"
)

// The classes Tailor serves, and the pod annotations that tie pods to a request.
const (
	// ProvisioningClassCheckCapacity asks whether the pods fit the capacity there is.
	ProvisioningClassCheckCapacity = "check-capacity.autoscaling.x-k8s.io"
	// ProvisioningClassBestEffortAtomicScaleUp asks for capacity for all the pods, or none.
	ProvisioningClassBestEffortAtomicScaleUp = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
	// ConsumeAnnotationKey on a pod names the request (in the pod's namespace) whose capacity it
	// takes.
	ConsumeAnnotationKey = Group + "/consume-provisioning-request"
	// ClassAnnotationKey on a pod names the class of the request it consumes.
	ClassAnnotationKey = Group + "/provisioning-class-name"
	// DeprecatedConsumeAnnotationKey is the key Cluster Autoscaler read before
	// ConsumeAnnotationKey; pods may still carry it.
	DeprecatedConsumeAnnotationKey = "cluster-autoscaler.kubernetes.io/consume-provisioning-request"
	// DeprecatedClassAnnotationKey is ClassAnnotationKey's older spelling.
	DeprecatedClassAnnotationKey = "cluster-autoscaler.kubernetes.io/provisioning-class-name"
)
