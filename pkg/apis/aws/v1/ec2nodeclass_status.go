package v1

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-sh/tailor/pkg/apis/internal/conditions"
)

// EC2NodeClass condition types. Ready is rolled up from the others: a NodeClaim is only launched
// from a Ready node class.
const (
	ConditionTypeSubnetsReady              = "SubnetsReady"
	ConditionTypeSecurityGroupsReady       = "SecurityGroupsReady"
	ConditionTypeAMIsReady                 = "AMIsReady"
	ConditionTypeInstanceProfileReady      = "InstanceProfileReady"
	ConditionTypeCapacityReservationsReady = "CapacityReservationsReady"
	ConditionTypeValidationSucceeded       = "ValidationSucceeded"
	ConditionTypeReady                     = conditions.Ready
)

var readyDependents = []string{
	ConditionTypeSubnetsReady, ConditionTypeSecurityGroupsReady, ConditionTypeAMIsReady,
	ConditionTypeInstanceProfileReady, ConditionTypeCapacityReservationsReady, ConditionTypeValidationSucceeded,
}

// Subnet is a subnet the selector terms resolved to.
type Subnet struct {
	// ID of the subnet.
	// +required
	ID string `json:"id"`
	// Zone is the subnet's availability zone name.
	// +required
	Zone string `json:"zone"`
	// ZoneID is the availability zone ID (the same physical zone in every account).
	// +optional
	ZoneID string `json:"zoneID,omitempty"`
}

// SecurityGroup is a security group the selector terms resolved to.
type SecurityGroup struct {
	// ID of the security group.
	// +required
	ID string `json:"id"`
	// Name of the security group.
	// +optional
	Name string `json:"name,omitempty"`
}

// CapacityReservation is a capacity reservation the selector terms resolved to.
type CapacityReservation struct {
	// ID of the reservation.
	// +required
	ID string `json:"id"`
	// InstanceType the reservation is for.
	// +required
	InstanceType string `json:"instanceType"`
	// AvailabilityZone the reservation is in.
	// +required
	AvailabilityZone string `json:"availabilityZone"`
	// OwnerID is the account that owns the reservation.
	// +kubebuilder:validation:Pattern:="^[0-9]{12}$"
	// +required
	OwnerID string `json:"ownerID"`
	// InstanceMatchCriteria is open or targeted.
	// +kubebuilder:validation:Enum:={open,targeted}
	// +required
	InstanceMatchCriteria string `json:"instanceMatchCriteria"`
	// ReservationType is a plain on-demand capacity reservation (default) or a capacity block.
	// +kubebuilder:validation:Enum:={default,capacity-block}
	// +kubebuilder:default=default
	// +optional
	ReservationType string `json:"reservationType,omitempty"`
	// State is active, or expiring when the reservation ends soon.
	// +kubebuilder:validation:Enum:={active,expiring}
	// +kubebuilder:default=active
	// +optional
	State string `json:"state,omitempty"`
	// EndTime is when the reservation expires, if it does.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
}

// AMI is an image the selector terms resolved to, with the instance requirements it suits
// (architecture, GPU or not, ...).
type AMI struct {
	// ID of the image.
	// +required
	ID string `json:"id"`
	// Name of the image.
	// +optional
	Name string `json:"name,omitempty"`
	// Deprecated images are used only when nothing newer matches.
	// +optional
	Deprecated bool `json:"deprecated,omitempty"`
	// Requirements an instance type must meet to run this image.
	// +listType=atomic
	// +required
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
}

// EC2NodeClassStatus is what the selectors currently resolve to.
type EC2NodeClassStatus struct {
	// Subnets resolved from subnetSelectorTerms.
	// +optional
	Subnets []Subnet `json:"subnets,omitempty"`
	// SecurityGroups resolved from securityGroupSelectorTerms.
	// +optional
	SecurityGroups []SecurityGroup `json:"securityGroups,omitempty"`
	// CapacityReservations resolved from capacityReservationSelectorTerms.
	// +optional
	CapacityReservations []CapacityReservation `json:"capacityReservations,omitempty"`
	// AMIs resolved from amiSelectorTerms.
	// +optional
	AMIs []AMI `json:"amis,omitempty"`
	// InstanceProfile is the instance profile name instances launch with.
	// +optional
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// Conditions say whether each selector resolved and whether the class is Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SetCondition sets a condition (keeping lastTransitionTime when the status is unchanged) and
// recomputes Ready from the other conditions. It reports whether anything changed.
func (in *EC2NodeClass) SetCondition(condType string, status metav1.ConditionStatus, reason, message string, now time.Time) bool {
	changed := conditions.Set(&in.Status.Conditions, in.Generation, condType, status, reason, message, now)
	if slices.Contains(readyDependents, condType) {
		changed = conditions.Rollup(&in.Status.Conditions, in.Generation, now, readyDependents...) || changed
	}
	return changed
}

// GetCondition returns the condition of that type, or nil.
func (in *EC2NodeClass) GetCondition(condType string) *metav1.Condition {
	return meta.FindStatusCondition(in.Status.Conditions, condType)
}

// IsTrue reports whether the condition of that type exists and is True.
func (in *EC2NodeClass) IsTrue(condType string) bool {
	return meta.IsStatusConditionTrue(in.Status.Conditions, condType)
}

// Alias is a parsed amiSelectorTerms alias, e.g. {AL2023, latest}.
type Alias struct {
	Family  string
	Version string
}

// Alias returns the alias term's family (as an AMIFamily value) and version, or nil when the
// class selects images another way.
func (in *EC2NodeClass) Alias() *Alias {
	for _, term := range in.Spec.AMISelectorTerms {
		family, version, ok := strings.Cut(term.Alias, "@")
		if !ok {
			continue
		}
		for _, f := range []string{AMIFamilyAL2, AMIFamilyAL2023, AMIFamilyBottlerocket, AMIFamilyWindows2019, AMIFamilyWindows2022, AMIFamilyWindows2025} {
			if strings.EqualFold(f, family) {
				return &Alias{Family: f, Version: version}
			}
		}
	}
	return nil
}

// AMIFamily returns spec.amiFamily, else the alias's family, else Custom. Validation guarantees
// one of the first two is set.
func (in *EC2NodeClass) AMIFamily() string {
	if in.Spec.AMIFamily != nil {
		return *in.Spec.AMIFamily
	}
	if alias := in.Alias(); alias != nil {
		return alias.Family
	}
	return AMIFamilyCustom
}
