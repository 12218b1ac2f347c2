// Package faults is the e2e suite of Tailor under failure: leader failover, an API server outage,
// EC2 throttling, a crash between launch and status write, orphaned and never-registering
// instances, an interruption storm, and the chaos day of seeded restarts. make chaos runs its long
// variants. Its tests are in _test.go files; see test/e2e/README.md.
package faults
