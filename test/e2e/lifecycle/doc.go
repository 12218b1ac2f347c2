// Package lifecycle is the e2e suite of a node's life after launch: termination and drain (budgets,
// grace periods, a granted eviction), clean-up when workloads go, node repair, and adopting the
// NodeClaims Karpenter launched. Its tests are in _test.go files; see test/e2e/README.md.
package lifecycle
