// Package cputime reads the CPU time the running process has used, user and system, for the
// benchmarks that report CPU-seconds beside wall time: on a shared machine the wall time says as
// much about the neighbours as about the code.
package cputime

import (
	"syscall"
	"testing"
	"time"
)

// Process is the CPU time this process has used so far; it fails tb when the kernel will not say.
func Process(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("reading the process's CPU time: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
