// Package memo remembers, for one plan, which places turned away a group of identical pods
// (Rejections), so that the pods of a Deployment after the first skip them. Claims are the
// planner's own type, so Rejections is generic over it; nodes are known by name and generation,
// pools by their nodepool.State.
package memo
