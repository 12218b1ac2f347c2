// Package ai is the e2e suite of accelerator and batch workloads: dynamic resource allocation of
// GPUs, gangs launched whole or not at all, and ProvisioningRequests. Its tests are in _test.go
// files; see test/e2e/README.md.
package ai
