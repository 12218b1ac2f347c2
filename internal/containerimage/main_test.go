package containerimage

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// The tests build testdata/hello, not the scheduler: the same kind of static, stamped binary,
// cross-compiled for both platforms in seconds rather than minutes. They build it once.
var (
	helloOnce sync.Once
	helloDir  string
	helloBins []Binary
	helloErr  error
)

// helloCreated is the tests' SOURCE_DATE_EPOCH: 2026-01-02T03:04:05Z.
var helloCreated = time.Unix(1767323045, 0).UTC()

const helloRevision = "0123456789abcdef0123456789abcdef01234567"

func TestMain(m *testing.M) {
	code := m.Run()
	if helloDir != "" {
		_ = os.RemoveAll(helloDir)
	}
	os.Exit(code)
}

// helloSpec is a Spec for hello built for linux/amd64 and linux/arm64, stamped as make image
// stamps the scheduler. Each caller gets its own copy to change.
func helloSpec(t *testing.T) Spec {
	t.Helper()
	helloOnce.Do(func() {
		helloDir, helloErr = os.MkdirTemp("", "containerimage-hello-")
		if helloErr != nil {
			return
		}
		var ldflags []string
		ldflags, helloErr = KubeVersionLDFlags("v1.36.3", "tailor-v0.0.1-test", helloRevision, helloCreated)
		if helloErr != nil {
			return
		}
		for _, arch := range []string{"amd64", "arm64"} {
			b := Binary{OS: "linux", Arch: arch, Path: filepath.Join(helloDir, "linux-"+arch, "hello")}
			if helloErr = GoBuild(context.Background(), "go", ".", "./testdata/hello", b, ldflags, os.Stderr); helloErr != nil {
				return
			}
			helloBins = append(helloBins, b)
		}
	})
	if helloErr != nil {
		t.Fatalf("building testdata/hello: %v", helloErr)
	}
	return Spec{
		Name:       "hello",
		Repository: "example.test/team/hello",
		Version:    "v0.0.1-test",
		Revision:   helloRevision,
		Source:     "https://github.com/tailor-sh/tailor",
		Licenses:   "Apache-2.0",
		Created:    helloCreated,
		Binaries:   slices.Clone(helloBins),
	}
}

// copyFile copies src over dst, for tests that swap a built file for another.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// binaryFor is the spec's binary for one arch.
func binaryFor(t *testing.T, s Spec, arch string) Binary {
	t.Helper()
	for _, b := range s.Binaries {
		if b.Arch == arch {
			return b
		}
	}
	t.Fatalf("no %s binary in %v", arch, s.Binaries)
	return Binary{}
}
