// Package install is the e2e suite of Tailor as installed: admission of the examples and of bad
// NodePools, the mutating webhook and its replicas' certificate, the sandbox's examples settling,
// and the metrics Karpenter's dashboards query. Its tests are in _test.go files; see
// test/e2e/README.md.
package install
