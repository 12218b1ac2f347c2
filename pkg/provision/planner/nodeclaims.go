package planner

import (
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/provision/planner/nodeclaim"
)

// PlannedClaim is a NodeClaim to launch and Option one offering it may launch as (see
// nodeclaim.Planned).
type (
	PlannedClaim = nodeclaim.Planned
	Option       = nodeclaim.Option
)

// MaxInstanceTypes is how many instance types a NodeClaim offers the cloud to fall back on, and
// MinValuesRelaxedAnnotationKey marks a NodeClaim launched with less than its minValues.
const (
	MaxInstanceTypes              = nodeclaim.MaxInstanceTypes
	MinValuesRelaxedAnnotationKey = nodeclaim.MinValuesRelaxedAnnotationKey
)

// NewNodeClaim turns a planned claim into the NodeClaim to create (see nodeclaim.New).
func NewNodeClaim(pc *PlannedClaim) *karpv1.NodeClaim { return nodeclaim.New(pc) }

// OptionsShort says which of the pool's requirements' minValues the options fall short of, or ""
// (see nodeclaim.OptionsShort).
func OptionsShort(pool *karpv1.NodePool, options []Option) string {
	return nodeclaim.OptionsShort(pool, options)
}
