package containerimage

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/version"
)

// TestKubeVersionLDFlags checks that the stamped version parses as the scheduler parses it at
// start (or it panics), keeps its Kubernetes major.minor (or the feature gates change), and
// that what cannot be stamped is refused before a long build.
func TestKubeVersionLDFlags(t *testing.T) {
	built := time.Unix(0, 0)
	for _, build := range []string{"tailor-v0.3.0", "tailor-5cfe6d9-dirty", "tailor-v0.3.0-4-g5cfe6d9"} {
		flags, err := KubeVersionLDFlags("v1.36.3", build, "abc", built)
		if err != nil {
			t.Errorf("%s: %v", build, err)
			continue
		}
		var gitVersion string
		for _, f := range flags {
			if v, ok := strings.CutPrefix(f, kubeVersionPkg+".gitVersion="); ok {
				gitVersion = v
			}
		}
		v, err := version.Parse(gitVersion)
		if err != nil {
			t.Errorf("%s: stamped %q, which the scheduler cannot parse: %v", build, gitVersion, err)
			continue
		}
		if v.Major() != 1 || v.Minor() != 36 || v.BuildMetadata() != build {
			t.Errorf("%s: stamped %q, parsed as %d.%d build %q", build, gitVersion, v.Major(), v.Minor(), v.BuildMetadata())
		}
	}
	for _, build := range []string{"tailor-a_b", "tailor-a b", "tailor-x..y"} {
		if _, err := KubeVersionLDFlags("v1.36.3", build, "", built); err == nil {
			t.Errorf("%q: stamped, want it refused", build)
		}
	}
	if _, err := KubeVersionLDFlags("master", "tailor-v1", "", built); err == nil {
		t.Error(`Kubernetes version "master": stamped, want it refused`)
	}
}

// TestGoBuildStampsAStaticBinary runs the hello built for this machine and reads back the
// stamp, and checks both builds are static ELF binaries for their architecture.
func TestGoBuildStampsAStaticBinary(t *testing.T) {
	s := helloSpec(t)
	for _, b := range s.Binaries {
		if err := checkStatic(b); err != nil {
			t.Error(err)
		}
	}
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skipf("cannot run a linux/amd64 or linux/arm64 binary on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	out, err := exec.Command(binaryFor(t, s, runtime.GOARCH).Path).CombinedOutput()
	if err != nil {
		t.Fatalf("running hello: %v: %s", err, out)
	}
	want := "v1.36.3+tailor-v0.0.1-test " + helloRevision + " 2026-01-02T03:04:05Z 1 36\n"
	if string(out) != want {
		t.Errorf("hello prints %q, want %q", out, want)
	}
}
