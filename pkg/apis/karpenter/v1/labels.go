package v1

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
)

// Well-known label values.
const (
	ArchitectureAmd64    = "amd64"
	ArchitectureArm64    = "arm64"
	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeReserved = "reserved"
)

// Labels Tailor puts on nodes (and NodeClaims).
const (
	NodePoolLabelKey        = Group + "/nodepool"
	CapacityTypeLabelKey    = Group + "/capacity-type"
	NodeRegisteredLabelKey  = Group + "/registered"
	NodeInitializedLabelKey = Group + "/initialized"
)

// Annotations.
const (
	// DoNotDisruptAnnotationKey on a pod ("true" or a duration) or a node blocks voluntary disruption.
	DoNotDisruptAnnotationKey = Group + "/do-not-disrupt"
	// NodePoolHashAnnotationKey holds the hash of the NodePool template a NodeClaim was made from;
	// a mismatch with the pool's current hash means the claim drifted.
	NodePoolHashAnnotationKey = Group + "/nodepool-hash"
	// NodePoolHashVersionAnnotationKey versions the hash, so a change in how it is computed does not
	// look like drift of every node.
	NodePoolHashVersionAnnotationKey = Group + "/nodepool-hash-version"
	// NodeClaimTerminationTimestampAnnotationKey is when terminationGracePeriod runs out.
	NodeClaimTerminationTimestampAnnotationKey = Group + "/nodeclaim-termination-timestamp"
)

// Taints Tailor manages.
const (
	// UnregisteredTaintKey is on every node Tailor launches until the node is matched with its
	// NodeClaim, so that no pod runs there before Tailor has synced labels and taints.
	UnregisteredTaintKey = Group + "/unregistered"
	// DisruptedTaintKey is put on nodes that are about to be drained and deleted.
	DisruptedTaintKey = Group + "/disrupted"
)

var (
	// UnregisteredNoExecuteTaint is the taint nodes register with.
	UnregisteredNoExecuteTaint = corev1.Taint{Key: UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}
	// DisruptedNoScheduleTaint keeps new pods off a node that is being disrupted.
	DisruptedNoScheduleTaint = corev1.Taint{Key: DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}
)

// TerminationFinalizer is on NodeClaims and nodes so that Tailor drains the node and terminates
// the instance before the objects go away.
const TerminationFinalizer = Group + "/termination"

var (
	// RestrictedLabelDomains may not be used in requirements or template labels, except for the
	// well-known labels and the LabelDomainExceptions: the kubelet refuses to set most of them, and
	// Tailor sets the rest itself. A key is in a domain when its prefix ends with it (as in
	// Karpenter, so "foo.kubernetes.io" is restricted too).
	RestrictedLabelDomains = sets.New("kubernetes.io", "k8s.io", Group, awsv1.Group)

	// LabelDomainExceptions are sub-domains of restricted domains that users may use freely.
	LabelDomainExceptions = sets.New("kops.k8s.io", corev1.LabelNamespaceSuffixNode, corev1.LabelNamespaceNodeRestriction)

	// WellKnownLabels are labels in restricted domains that Tailor understands: NodePools and pods
	// may constrain them, and a pod may require them even when a pool does not mention them. The
	// AWS instance labels are included because every Tailor cloud, the fake too, speaks them.
	WellKnownLabels = sets.New(
		NodePoolLabelKey,
		corev1.LabelTopologyZone,
		corev1.LabelTopologyRegion,
		corev1.LabelInstanceTypeStable,
		corev1.LabelArchStable,
		corev1.LabelOSStable,
		CapacityTypeLabelKey,
		corev1.LabelWindowsBuild,
	).Union(awsv1.WellKnownLabels)

	// RestrictedLabels are single labels that may never be required or set: the hostname is
	// unknown until the node exists.
	RestrictedLabels = sets.New(corev1.LabelHostname)

	// NormalizedLabels maps deprecated aliases to the well-known label they mean; requirements on
	// the aliases are accepted and treated as requirements on the well-known label.
	NormalizedLabels = map[string]string{
		corev1.LabelFailureDomainBetaZone:   corev1.LabelTopologyZone,
		corev1.LabelFailureDomainBetaRegion: corev1.LabelTopologyRegion,
		"beta.kubernetes.io/arch":           corev1.LabelArchStable,
		"beta.kubernetes.io/os":             corev1.LabelOSStable,
		corev1.LabelInstanceType:            corev1.LabelInstanceTypeStable,
	}
)

// IsRestrictedLabel returns an error naming the key if a NodePool may not constrain or set it. It
// agrees with the CRD's CEL rules on requirement keys, so the planner can reject exactly what the
// API server would have. (The CRD additionally refuses karpenter.sh/nodepool in NodePool
// requirements, because Tailor writes that requirement itself.)
func IsRestrictedLabel(key string) error {
	if WellKnownLabels.Has(key) {
		return nil
	}
	if _, ok := NormalizedLabels[key]; ok {
		return nil
	}
	if RestrictedLabels.Has(key) {
		return fmt.Errorf("label %q is restricted", key)
	}
	if domain := restrictedDomain(key); domain != "" {
		return fmt.Errorf("label %q is restricted: domain %q is reserved for the kubelet, Tailor and the cloud provider; use a well-known label or a custom domain", key, domain)
	}
	return nil
}

// IsRestrictedNodeLabel reports whether Tailor must not copy the label from a NodeClaim onto its
// node: the well-known labels are set by the kubelet or the cloud, and restricted domains belong
// to someone else.
func IsRestrictedNodeLabel(key string) bool {
	return WellKnownLabels.Has(key) || RestrictedLabels.Has(key) || restrictedDomain(key) != ""
}

// GetLabelDomain returns the prefix of a label key ("" when it has none).
func GetLabelDomain(key string) string {
	if domain, _, ok := strings.Cut(key, "/"); ok {
		return domain
	}
	return ""
}

// restrictedDomain returns the restricted domain the key falls in, or "".
func restrictedDomain(key string) string {
	domain := GetLabelDomain(key)
	if domain == "" {
		return ""
	}
	for exception := range LabelDomainExceptions {
		if strings.HasSuffix(domain, exception) {
			return ""
		}
	}
	for _, restricted := range sets.List(RestrictedLabelDomains) {
		if strings.HasSuffix(domain, restricted) {
			return restricted
		}
	}
	return ""
}
