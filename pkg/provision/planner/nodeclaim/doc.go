// Package nodeclaim is a claim as a plan decided it (Planned: a NodePool, its pods, the offerings
// it may launch as) and the NodeClaim it becomes (New): the pool's template narrowed to the
// offerings every planned pod passed the Filters on, with the custom labels the plan chose and
// minValues relaxed as far as a best-effort policy let the plan go.
package nodeclaim
