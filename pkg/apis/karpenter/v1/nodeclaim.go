package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Karpenter extends the node selector operators with inclusive integer bounds. They only ever
// appear in NodePool and NodeClaim requirements, never in a pod's node affinity.
const (
	NodeSelectorOpGte corev1.NodeSelectorOperator = "Gte"
	NodeSelectorOpLte corev1.NodeSelectorOperator = "Lte"
)

// NodeClaimSpec is what one node must look like: the planner writes it from a NodePool template
// narrowed by the pods it is launched for, and the cloud provider launches an instance that meets it.
type NodeClaimSpec struct {
	// Taints are applied to the node and must be tolerated by the pods placed on it. (Key, value and
	// effect formats are added to the CRD by hack/crdpatch: markers cannot reach corev1.Taint.)
	// +listType=atomic
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are put on the node at startup and are expected to be removed by a DaemonSet
	// (e.g. a CNI agent) once the node is ready. Pods need not tolerate them to get a node launched,
	// and the node counts as initialized only once they are gone.
	// +listType=atomic
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements constrain the node's labels; every node launched for the claim satisfies all of
	// them. An instance-type requirement lists the types the cloud may choose from, cheapest first.
	// +kubebuilder:validation:MaxItems:=100
	// +listType=atomic
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`
	// Resources are what the pods planned onto the claim request, daemonset overhead included.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`
	// NodeClassRef names the provider-specific node class (e.g. an EC2NodeClass) to launch with.
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod bounds how long draining may take once deletion starts. When it runs
	// out, remaining pods are deleted even if a PodDisruptionBudget or karpenter.sh/do-not-disrupt
	// would block them; pods are deleted early enough to get their own terminationGracePeriodSeconds.
	// Unset means wait for the drain forever.
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type="string"
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is how long after creation the node is forcefully replaced, whatever budgets say.
	// "Never" turns it off.
	// +kubebuilder:default:="720h"
	// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitempty"`
}

// NodeSelectorRequirementWithMinValues is a node selector requirement (key, operator, values; the
// fields sit at the top level of the object, as in corev1.NodeSelectorRequirement) plus minValues,
// the least number of distinct values of the key that must stay possible.
//
// The restricted-label rules on key are the ones shared by NodePools and NodeClaims; NodePools add
// one more (no karpenter.sh/nodepool requirement) on their requirements list.
// +kubebuilder:validation:XValidation:message="requirements with operator 'In' must have a value defined",rule="self.operator != 'In' || (has(self.values) && size(self.values) > 0)",fieldPath=".values"
// +kubebuilder:validation:XValidation:message="requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value",rule="!(self.operator in ['Gt', 'Lt', 'Gte', 'Lte']) || (has(self.values) && size(self.values) == 1 && self.values[0].matches('^[0-9]{1,18}$'))",fieldPath=".values"
// +kubebuilder:validation:XValidation:message="requirements with 'minValues' must have at least that many values specified in the 'values' field",rule="!(self.operator == 'In' && has(self.minValues)) || (has(self.values) && size(self.values) >= self.minValues)",fieldPath=".minValues"
// +kubebuilder:validation:XValidation:message="requirements with key 'karpenter.sh/capacity-type' and operator 'In' may only have the values 'spot', 'on-demand' or 'reserved'",rule="!(self.key == 'karpenter.sh/capacity-type' && self.operator == 'In') || !has(self.values) || self.values.all(v, v in ['spot', 'on-demand', 'reserved'])",fieldPath=".values"
type NodeSelectorRequirementWithMinValues struct {
	// Key is the node label the requirement applies to. The rules below are IsRestrictedLabel in
	// CEL; the karpenter.k8s.aws list is awsv1.WellKnownLabels (a test in pkg/apis keeps all three
	// in step).
	// +kubebuilder:validation:MaxLength:=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	// +kubebuilder:validation:XValidation:message="label domain \"kubernetes.io\" is restricted",rule="self in ['beta.kubernetes.io/instance-type', 'failure-domain.beta.kubernetes.io/region', 'beta.kubernetes.io/os', 'beta.kubernetes.io/arch', 'failure-domain.beta.kubernetes.io/zone', 'topology.kubernetes.io/zone', 'topology.kubernetes.io/region', 'node.kubernetes.io/instance-type', 'kubernetes.io/arch', 'kubernetes.io/os', 'node.kubernetes.io/windows-build'] || self.find('^[^/]*/').endsWith('node.kubernetes.io/') || self.find('^[^/]*/').endsWith('node-restriction.kubernetes.io/') || !self.find('^[^/]*/').endsWith('kubernetes.io/')"
	// +kubebuilder:validation:XValidation:message="label domain \"k8s.io\" is restricted",rule="self.find('^[^/]*/').endsWith('kops.k8s.io/') || !self.find('^[^/]*/').endsWith('k8s.io/')"
	// +kubebuilder:validation:XValidation:message="label domain \"karpenter.sh\" is restricted",rule="self in ['karpenter.sh/capacity-type', 'karpenter.sh/nodepool'] || !self.find('^[^/]*/').endsWith('karpenter.sh/')"
	// +kubebuilder:validation:XValidation:message="label \"kubernetes.io/hostname\" is restricted",rule="self != 'kubernetes.io/hostname'"
	// +kubebuilder:validation:XValidation:message="label domain \"karpenter.k8s.aws\" is restricted",rule="self in ['karpenter.k8s.aws/instance-category', 'karpenter.k8s.aws/instance-family', 'karpenter.k8s.aws/instance-generation', 'karpenter.k8s.aws/instance-size', 'karpenter.k8s.aws/instance-cpu', 'karpenter.k8s.aws/instance-cpu-manufacturer', 'karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz', 'karpenter.k8s.aws/instance-memory', 'karpenter.k8s.aws/instance-ebs-bandwidth', 'karpenter.k8s.aws/instance-network-bandwidth', 'karpenter.k8s.aws/instance-gpu-name', 'karpenter.k8s.aws/instance-gpu-manufacturer', 'karpenter.k8s.aws/instance-gpu-count', 'karpenter.k8s.aws/instance-gpu-memory', 'karpenter.k8s.aws/instance-accelerator-name', 'karpenter.k8s.aws/instance-accelerator-manufacturer', 'karpenter.k8s.aws/instance-accelerator-count', 'karpenter.k8s.aws/instance-hypervisor', 'karpenter.k8s.aws/instance-encryption-in-transit-supported', 'karpenter.k8s.aws/instance-local-nvme', 'karpenter.k8s.aws/instance-capability-flex', 'karpenter.k8s.aws/instance-capacity-flex', 'karpenter.k8s.aws/capacity-reservation-id', 'karpenter.k8s.aws/capacity-reservation-type'] || !self.find('^[^/]*/').endsWith('karpenter.k8s.aws/')"
	// +required
	Key string `json:"key"`
	// Operator relates the key to the values: In, NotIn, Exists, DoesNotExist, Gt, Lt, and
	// Karpenter's inclusive bounds Gte and Lte.
	// +kubebuilder:validation:Enum:=In;NotIn;Exists;DoesNotExist;Gt;Lt;Gte;Lte
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// Values are label values. In and NotIn take one or more; Gt, Lt, Gte and Lte take exactly one
	// non-negative integer; Exists and DoesNotExist take none. The cap (Karpenter has none) bounds
	// the cost of the CEL rules; it is above the number of EC2 instance types, the longest list a
	// NodeClaim carries.
	// +kubebuilder:validation:MaxItems:=2000
	// +kubebuilder:validation:items:MaxLength:=63
	// +kubebuilder:validation:items:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
	// MinValues is the least number of distinct values of Key the launch options must keep, e.g.
	// minValues 5 on node.kubernetes.io/instance-type keeps at least five instance types possible.
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=50
	// +optional
	MinValues *int `json:"minValues,omitempty"`
}

// ResourceRequirements holds what a NodeClaim needs; only requests, as in Karpenter.
type ResourceRequirements struct {
	// Requests are the resources the node must be able to allocate.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// NodeClassReference points at a provider node class by group, kind and name.
type NodeClassReference struct {
	// Kind of the node class, e.g. EC2NodeClass.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="kind may not be empty"
	// +required
	Kind string `json:"kind"`
	// Name of the node class.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="name may not be empty"
	// +required
	Name string `json:"name"`
	// Group of the node class, e.g. karpenter.k8s.aws (a group, not an apiVersion).
	// +kubebuilder:validation:XValidation:rule="self != ''",message="group may not be empty"
	// +kubebuilder:validation:Pattern=`^[^/]*$`
	// +required
	Group string `json:"group"`
}

// GroupKind returns the referenced node class's group and kind.
func (r *NodeClassReference) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: r.Group, Kind: r.Kind}
}

// NodeClaim is a request for one node, and the record of the instance launched for it.
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodeclaims,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".metadata.labels.node\\.kubernetes\\.io/instance-type",description=""
// +kubebuilder:printcolumn:name="Capacity",type="string",JSONPath=".metadata.labels.karpenter\\.sh/capacity-type",description=""
// +kubebuilder:printcolumn:name="Zone",type="string",JSONPath=".metadata.labels.topology\\.kubernetes\\.io/zone",description=""
// +kubebuilder:printcolumn:name="Node",type="string",JSONPath=".status.nodeName",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="ImageID",type="string",JSONPath=".status.imageID",priority=1,description=""
// +kubebuilder:printcolumn:name="ID",type="string",JSONPath=".status.providerID",priority=1,description=""
// +kubebuilder:printcolumn:name="NodePool",type="string",JSONPath=".metadata.labels.karpenter\\.sh/nodepool",priority=1,description=""
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.nodeClassRef.name",priority=1,description=""
// +kubebuilder:printcolumn:name="Drifted",type="string",JSONPath=".status.conditions[?(@.type==\"Drifted\")].status",priority=1,description=""
type NodeClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec cannot change once created: a different node is a different NodeClaim.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
	// +required
	Spec   NodeClaimSpec   `json:"spec"`
	Status NodeClaimStatus `json:"status,omitempty"`
}

// NodeClaimList is a list of NodeClaims.
// +kubebuilder:object:root=true
type NodeClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeClaim `json:"items"`
}
