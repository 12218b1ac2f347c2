package sandbox

import (
	"fmt"
	"os"
	"sync"

	"k8s.io/klog/v2"
)

// ProcessTB lets code written for tests, such as the API server's test harness, run in a plain
// process: logs go to klog, failures to an error, cleanups run on Close.
type ProcessTB struct {
	name string
	dir  string

	mu       sync.Mutex
	failed   bool
	cleanups []func()
}

// NewProcessTB returns a ProcessTB whose TempDir is under dir.
func NewProcessTB(name, dir string) *ProcessTB { return &ProcessTB{name: name, dir: dir} }

// Close runs the cleanups, last registered first.
func (t *ProcessTB) Close() {
	t.mu.Lock()
	cleanups := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
}

func (t *ProcessTB) Attr(string, string) {}
func (t *ProcessTB) Chdir(dir string) {
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
}
func (t *ProcessTB) Cleanup(f func()) {
	t.mu.Lock()
	t.cleanups = append(t.cleanups, f)
	t.mu.Unlock()
}
func (t *ProcessTB) Error(args ...any) { t.Log(args...); t.Fail() }
func (t *ProcessTB) Errorf(format string, args ...any) {
	t.Logf(format, args...)
	t.Fail()
}
func (t *ProcessTB) Fail() {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
}

// FailNow stops the calling goroutine, as testing.T does; the harness only calls it on the
// goroutine that started the control plane, which then reports the failure.
func (t *ProcessTB) FailNow() {
	t.Fail()
	panic(fmt.Sprintf("%s: fatal error in the control plane", t.name))
}
func (t *ProcessTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}
func (t *ProcessTB) Fatal(args ...any)                 { t.Log(args...); t.FailNow() }
func (t *ProcessTB) Fatalf(format string, args ...any) { t.Logf(format, args...); t.FailNow() }
func (t *ProcessTB) Helper()                           {}
func (t *ProcessTB) Log(args ...any)                   { klog.V(4).InfoDepth(1, fmt.Sprint(args...)) }
func (t *ProcessTB) Logf(format string, args ...any) {
	klog.V(4).InfoDepth(1, fmt.Sprintf(format, args...))
}
func (t *ProcessTB) Name() string { return t.name }
func (t *ProcessTB) Setenv(key, value string) {
	if err := os.Setenv(key, value); err != nil {
		t.Fatal(err)
	}
}
func (t *ProcessTB) Skip(args ...any)                 { t.Log(args...); t.SkipNow() }
func (t *ProcessTB) Skipf(format string, args ...any) { t.Logf(format, args...); t.SkipNow() }
func (t *ProcessTB) SkipNow()                         { t.FailNow() }
func (t *ProcessTB) Skipped() bool                    { return false }
func (t *ProcessTB) TempDir() string {
	dir, err := os.MkdirTemp(t.dir, "tmp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
