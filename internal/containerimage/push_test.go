package containerimage

import (
	"bytes"
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	cranecmd "github.com/google/go-containerregistry/cmd/crane/cmd"
	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestCranePushTakesTheOutputs runs `crane push`'s own command, in process, against
// go-containerregistry's in-memory registry: the OCI layout goes up as the multi-platform
// index and each tarball as its platform's image, with the digests Write made.
func TestCranePushTakesTheOutputs(t *testing.T) {
	s := helloSpec(t)
	dir := t.TempDir()
	want, err := Write(dir, s)
	if err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")

	push := func(path, ref string) string {
		t.Helper()
		opts := []crane.Option{crane.Insecure}
		cmd := cranecmd.NewCmdPush(&opts)
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs([]string{path, ref})
		if err := cmd.Execute(); err != nil {
			t.Fatalf("crane push %s %s: %v", path, ref, err)
		}
		return strings.TrimSpace(out.String())
	}

	ref := host + "/tailor/hello:v0.0.1-test"
	if got := push(LayoutDir(dir), ref); got != host+"/tailor/hello@"+want.String() {
		t.Errorf("crane push of the layout printed %q, want the index digest %s", got, want)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(r)
	if err != nil {
		t.Fatalf("the registry has no index at %s: %v", ref, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range im.Manifests {
		platforms = append(platforms, d.Platform.String())
	}
	slices.Sort(platforms)
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("pushed index lists %v", platforms)
	}

	for _, b := range s.Binaries {
		tref := host + "/tailor/hello:" + b.Arch
		push(TarballPath(dir, s, b), tref)
		r, err := name.ParseReference(tref, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		img, err := remote.Image(r)
		if err != nil {
			t.Fatalf("the registry has no image at %s: %v", tref, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != b.Arch || cf.Config.User != User || cf.Config.Entrypoint[0] != "/hello" {
			t.Errorf("%s: pushed config is %s, user %q, entrypoint %q", filepath.Base(TarballPath(dir, s, b)), cf.Architecture, cf.Config.User, cf.Config.Entrypoint)
		}
	}
}
