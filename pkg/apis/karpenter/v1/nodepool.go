package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePoolSpec says what nodes a pool may launch for pending pods, how much of them, and how they
// may be disrupted. The planner narrows the template per launch from the pods' own constraints.
type NodePoolSpec struct {
	// Template is the shape of every NodeClaim this pool creates.
	// +required
	Template NodeClaimTemplate `json:"template"`
	// Disruption controls consolidation and the budgets that bound voluntary disruption.
	// The default gives consolidateAfter 0s, which in turn lets the nested defaults (policy and
	// budgets) apply when disruption is left out entirely.
	// +kubebuilder:default:={consolidateAfter: "0s"}
	// +optional
	Disruption Disruption `json:"disruption"`
	// Limits cap the total resources of the nodes this pool owns (e.g. cpu: 1000); no launch may
	// take the pool over them.
	// +optional
	Limits Limits `json:"limits,omitempty"`
	// Weight orders pools: higher first, unset counts as 0.
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=100
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// Disruption configures voluntary disruption of a pool's nodes.
type Disruption struct {
	// ConsolidateAfter is how long a node must go without pods arriving or leaving before it may be
	// consolidated. "Never" turns consolidation off for the pool.
	// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +required
	ConsolidateAfter NillableDuration `json:"consolidateAfter"`
	// ConsolidationPolicy says which nodes consolidation may act on: only empty ones (WhenEmpty), or
	// also underutilized ones whose pods fit elsewhere or on something cheaper.
	// +kubebuilder:default:="WhenEmptyOrUnderutilized"
	// +kubebuilder:validation:Enum:={WhenEmpty,WhenEmptyOrUnderutilized}
	// +optional
	ConsolidationPolicy ConsolidationPolicy `json:"consolidationPolicy,omitempty"`
	// Budgets bound how many of the pool's nodes may be voluntarily disrupted at once. When several
	// are active for a reason, the most restrictive wins.
	// +kubebuilder:validation:XValidation:message="'schedule' must be set with 'duration'",rule="self.all(x, has(x.schedule) == has(x.duration))"
	// +kubebuilder:default:={{nodes: "10%"}}
	// +kubebuilder:validation:MaxItems:=50
	// +listType=atomic
	// +optional
	Budgets []Budget `json:"budgets,omitempty"`
}

// Budget limits how many nodes may be disrupted at once, optionally only during a cron window and
// only for some reasons.
type Budget struct {
	// Reasons the budget applies to; unset means all of them.
	// +kubebuilder:validation:MaxItems:=50
	// +listType=set
	// +optional
	Reasons []DisruptionReason `json:"reasons,omitempty"`
	// Nodes is a count ("5") or a percentage of the pool's nodes ("10%", rounded up) that may be
	// disrupting at the same time. It is a string rather than an IntOrString so that the CRD can
	// carry a pattern for it.
	// +kubebuilder:validation:Pattern:="^((100|[0-9]{1,2})%|[0-9]+)$"
	// +kubebuilder:default:="10%"
	Nodes string `json:"nodes"`
	// Schedule is a cron expression (UTC, or a macro like @daily) at which the budget becomes active
	// for Duration. Unset means always active.
	// +kubebuilder:validation:Pattern:=`^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$`
	// +optional
	Schedule *string `json:"schedule,omitempty"`
	// Duration is how long the budget stays active after each Schedule hit. Hours and minutes only,
	// since cron has no seconds; the optional trailing 0s lets time.Duration.String() round-trip.
	// At most 6 digits of hours and 7 of minutes: Karpenter's pattern admits any run of digits, and
	// a value past time.Duration's ~2.5 million hours is stored but cannot be decoded again.
	// +kubebuilder:validation:Pattern=`^((([0-9]{1,6}h)|([0-9]{1,7}m)|([0-9]{1,6}h[0-9]{1,7}m))(0s)?)$`
	// +kubebuilder:validation:Type="string"
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
}

// ConsolidationPolicy is WhenEmpty or WhenEmptyOrUnderutilized.
type ConsolidationPolicy string

const (
	ConsolidationPolicyWhenEmpty                ConsolidationPolicy = "WhenEmpty"
	ConsolidationPolicyWhenEmptyOrUnderutilized ConsolidationPolicy = "WhenEmptyOrUnderutilized"
)

// DisruptionReason is a voluntary disruption method that a budget can be scoped to.
// +kubebuilder:validation:Enum={Underutilized,Empty,Drifted}
type DisruptionReason string

const (
	DisruptionReasonUnderutilized DisruptionReason = "Underutilized"
	DisruptionReasonEmpty         DisruptionReason = "Empty"
	DisruptionReasonDrifted       DisruptionReason = "Drifted"
)

// WellKnownDisruptionReasons lists every DisruptionReason, e.g. to compute budgets per reason.
var WellKnownDisruptionReasons = []DisruptionReason{
	DisruptionReasonUnderutilized, DisruptionReasonEmpty, DisruptionReasonDrifted,
}

// Limits caps a pool's total resources.
type Limits corev1.ResourceList

// NodeClaimTemplate is the metadata and spec that every NodeClaim of a pool starts from. Its labels
// are requirements too (as in Karpenter, each an In on its one value): a label that the
// requirements on the same key refuse would leave the pool no node to launch, and is refused here,
// where the user sees it, rather than found by the planner.
// +kubebuilder:validation:XValidation:message="a label here must satisfy every requirement on its key in spec.template.spec.requirements: template labels are requirements too, and no node could carry both",rule="!has(self.metadata) || !has(self.metadata.labels) || !self.spec.requirements.exists(r, r.key in self.metadata.labels && ((r.operator == 'In' && !(has(r.values) && self.metadata.labels[r.key] in r.values)) || (r.operator == 'NotIn' && has(r.values) && self.metadata.labels[r.key] in r.values) || r.operator == 'DoesNotExist' || (r.operator in ['Gt', 'Gte', 'Lt', 'Lte'] && has(r.values) && size(r.values) == 1 && r.values[0].matches('^[0-9]{1,18}$') && (!self.metadata.labels[r.key].matches('^[0-9]{1,18}$') || (r.operator == 'Gt' && int(self.metadata.labels[r.key]) <= int(r.values[0])) || (r.operator == 'Gte' && int(self.metadata.labels[r.key]) < int(r.values[0])) || (r.operator == 'Lt' && int(self.metadata.labels[r.key]) >= int(r.values[0])) || (r.operator == 'Lte' && int(self.metadata.labels[r.key]) > int(r.values[0]))))))",fieldPath=".metadata.labels"
type NodeClaimTemplate struct {
	// ObjectMeta is embedded, as in Karpenter, so template.Labels reads naturally.
	ObjectMeta `json:"metadata,omitempty"`
	// +required
	Spec NodeClaimTemplateSpec `json:"spec"`
}

// ObjectMeta is the part of object metadata a template may set: labels and annotations that every
// node of the pool gets.
type ObjectMeta struct {
	// Labels are added to every node. Keys in restricted domains are refused because the kubelet
	// refuses them, or because Tailor sets them itself. (The value format is added to the CRD by
	// hack/crdpatch: a CEL rule over unbounded values would exceed the API server's cost budget.)
	// +kubebuilder:validation:MaxProperties:=100
	// +kubebuilder:validation:XValidation:message="label keys must be qualified names",rule="self.all(x, x.size() <= 316 && x.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$'))"
	// +kubebuilder:validation:XValidation:message="label domain \"kubernetes.io\" is restricted",rule="self.all(x, x in ['beta.kubernetes.io/instance-type', 'failure-domain.beta.kubernetes.io/region', 'beta.kubernetes.io/os', 'beta.kubernetes.io/arch', 'failure-domain.beta.kubernetes.io/zone', 'topology.kubernetes.io/zone', 'topology.kubernetes.io/region', 'kubernetes.io/arch', 'kubernetes.io/os', 'node.kubernetes.io/windows-build'] || x.find('^[^/]*/').endsWith('node.kubernetes.io/') || x.find('^[^/]*/').endsWith('node-restriction.kubernetes.io/') || !x.find('^[^/]*/').endsWith('kubernetes.io/'))"
	// +kubebuilder:validation:XValidation:message="label domain \"k8s.io\" is restricted",rule="self.all(x, x.find('^[^/]*/').endsWith('kops.k8s.io/') || !x.find('^[^/]*/').endsWith('k8s.io/'))"
	// +kubebuilder:validation:XValidation:message="label domain \"karpenter.sh\" is restricted",rule="self.all(x, x in ['karpenter.sh/capacity-type', 'karpenter.sh/nodepool'] || !x.find('^[^/]*/').endsWith('karpenter.sh/'))"
	// +kubebuilder:validation:XValidation:message="label \"karpenter.sh/nodepool\" is restricted",rule="self.all(x, x != 'karpenter.sh/nodepool')"
	// +kubebuilder:validation:XValidation:message="label \"kubernetes.io/hostname\" is restricted",rule="self.all(x, x != 'kubernetes.io/hostname')"
	// +kubebuilder:validation:XValidation:message="label domain \"karpenter.k8s.aws\" is restricted",rule="self.all(x, x in ['karpenter.k8s.aws/instance-category', 'karpenter.k8s.aws/instance-family', 'karpenter.k8s.aws/instance-generation', 'karpenter.k8s.aws/instance-size', 'karpenter.k8s.aws/instance-cpu', 'karpenter.k8s.aws/instance-cpu-manufacturer', 'karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz', 'karpenter.k8s.aws/instance-memory', 'karpenter.k8s.aws/instance-ebs-bandwidth', 'karpenter.k8s.aws/instance-network-bandwidth', 'karpenter.k8s.aws/instance-gpu-name', 'karpenter.k8s.aws/instance-gpu-manufacturer', 'karpenter.k8s.aws/instance-gpu-count', 'karpenter.k8s.aws/instance-gpu-memory', 'karpenter.k8s.aws/instance-accelerator-name', 'karpenter.k8s.aws/instance-accelerator-manufacturer', 'karpenter.k8s.aws/instance-accelerator-count', 'karpenter.k8s.aws/instance-hypervisor', 'karpenter.k8s.aws/instance-encryption-in-transit-supported', 'karpenter.k8s.aws/instance-local-nvme', 'karpenter.k8s.aws/instance-capability-flex', 'karpenter.k8s.aws/instance-capacity-flex', 'karpenter.k8s.aws/capacity-reservation-id', 'karpenter.k8s.aws/capacity-reservation-type'] || !x.find('^[^/]*/').endsWith('karpenter.k8s.aws/'))"
	// +mapType=atomic
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are added to every node.
	// +mapType=granular
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// NodeClaimTemplateSpec is NodeClaimSpec without resources, which only a launch can know.
type NodeClaimTemplateSpec struct {
	// Taints are applied to every node of the pool.
	// +listType=atomic
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints: see NodeClaimSpec.StartupTaints.
	// +listType=atomic
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements constrain the labels of every node of the pool. karpenter.sh/nodepool is refused
	// here (Tailor sets it) although NodeClaims carry it.
	// +kubebuilder:validation:XValidation:message="label \"karpenter.sh/nodepool\" is restricted",rule="self.all(x, x.key != 'karpenter.sh/nodepool')"
	// +kubebuilder:validation:MaxItems:=100
	// +listType=atomic
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`
	// NodeClassRef names the node class; its group and kind cannot change (only its name can).
	// +kubebuilder:validation:XValidation:rule="self.group == oldSelf.group",message="nodeClassRef.group is immutable"
	// +kubebuilder:validation:XValidation:rule="self.kind == oldSelf.kind",message="nodeClassRef.kind is immutable"
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod: see NodeClaimSpec.TerminationGracePeriod.
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type="string"
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter: see NodeClaimSpec.ExpireAfter.
	// +kubebuilder:default:="720h"
	// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitempty"`
}

// NodePool is a set of nodes Tailor may launch and disrupt under one template and set of limits.
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:path=nodepools,scope=Cluster,categories=karpenter
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.template.spec.nodeClassRef.name",description=""
// +kubebuilder:printcolumn:name="Nodes",type="string",JSONPath=".status.resources.nodes",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=".spec.weight",priority=1,description=""
// +kubebuilder:printcolumn:name="CPU",type="string",JSONPath=".status.resources.cpu",priority=1,description=""
// +kubebuilder:printcolumn:name="Memory",type="string",JSONPath=".status.resources.memory",priority=1,description=""
// +kubebuilder:subresource:status
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   NodePoolSpec   `json:"spec"`
	Status NodePoolStatus `json:"status,omitempty"`
}

// NodePoolList is a list of NodePools.
// +kubebuilder:object:root=true
type NodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePool `json:"items"`
}
