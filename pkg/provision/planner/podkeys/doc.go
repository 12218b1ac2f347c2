// Package podkeys reads, from pods' specs alone, what the scheduler's placement plugins may read
// when a pod is weighed: which node label keys (Relevance, Keys), so that offerings of a NodePool
// that agree on those keys are one class, which placement needs asking about once; which keys
// pods spread over (Spreads, ReadBySpreaders, SpreadKeysOfPods); and which pods are alike to the
// plugins (SpecKey, GroupOf), so that one answer serves them all.
package podkeys
