// Package disruption is the e2e suite of what Tailor takes away: consolidation within budgets and
// PodDisruptionBudgets, drift, expiration, spot interruption and rebalance notices, the guards
// that keep a node (do-not-disrupt, budget windows, a failed replacement), and the race between a
// consolidation and a pod assumed onto its node. Its tests are in _test.go files; see
// test/e2e/README.md.
package disruption
