// Package podkeys says, from pods' specs alone, which node label keys the scheduler's placement
// plugins may read when a pod is weighed (Relevance, Keys): offerings of a NodePool that agree on
// those keys are one class, which placement needs asking about once.
package podkeys
