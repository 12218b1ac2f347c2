// Package provisioning is the e2e suite of scale-up: pods Pending to Running on capacity Tailor
// launches for them (topology spread and custom domains, preferences, volumes' zones, capacity
// shortages and launch failures, the Events a scale-up writes), and the benchmarks of a burst and
// of a fleet at scale. Its tests are in _test.go files; see test/e2e/README.md.
package provisioning
