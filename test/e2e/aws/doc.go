// Package aws is the e2e suite of the AWS provider against the emulator: the examples run on it,
// EC2NodeClass readiness, user data and drift, capacity reservations, Windows nodes, and
// Karpenter's documented NodePool and EC2NodeClass shapes (testdata/karpenter-shapes). Its tests
// are in _test.go files; see test/e2e/README.md.
package aws
