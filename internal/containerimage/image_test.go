package containerimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestWriteThenVerify writes hello's image and reads it back with go-containerregistry's own
// readers, checking each property directly rather than through Verify; then Verify agrees.
func TestWriteThenVerify(t *testing.T) {
	s := helloSpec(t)
	dir := t.TempDir()
	if _, err := Write(dir, s); err != nil {
		t.Fatal(err)
	}

	root, err := layout.ImageIndexFromPath(filepath.Join(dir, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	rm, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(rm.Manifests) != 1 || rm.Manifests[0].Annotations[RefName] != "v0.0.1-test" {
		t.Fatalf("layout index.json lists %+v, want one entry named v0.0.1-test", rm.Manifests)
	}
	idx, err := root.ImageIndex(rm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
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
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
		t.Fatalf("index platforms %v, want exactly %v", platforms, want)
	}

	wantLabels := map[string]string{
		"org.opencontainers.image.title":    "hello",
		"org.opencontainers.image.source":   "https://github.com/tailor-sh/tailor",
		"org.opencontainers.image.version":  "v0.0.1-test",
		"org.opencontainers.image.revision": helloRevision,
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.created":  "2026-01-02T03:04:05Z",
	}
	tag, err := s.Tag()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range im.Manifests {
		b := binaryFor(t, s, d.Platform.Architecture)
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != "linux" || cf.Architecture != b.Arch {
			t.Errorf("%s: config platform %s/%s", b.Platform(), cf.OS, cf.Architecture)
		}
		if cf.Config.User != "65532:65532" {
			t.Errorf("%s: user %q, want 65532:65532", b.Platform(), cf.Config.User)
		}
		if !slices.Equal(cf.Config.Entrypoint, []string{"/hello"}) || cf.Config.Cmd != nil {
			t.Errorf("%s: entrypoint %q cmd %q, want [/hello] and none", b.Platform(), cf.Config.Entrypoint, cf.Config.Cmd)
		}
		if !maps.Equal(cf.Config.Labels, wantLabels) {
			t.Errorf("%s: labels %v, want %v", b.Platform(), cf.Config.Labels, wantLabels)
		}
		if !cf.Created.Equal(helloCreated) {
			t.Errorf("%s: created %s, want %s", b.Platform(), cf.Created, helloCreated)
		}

		files := layerContents(t, img)
		if names := slices.Sorted(maps.Keys(files)); !slices.Equal(names, []string{"etc/", "etc/group", "etc/passwd", "hello"}) {
			t.Errorf("%s: layer holds %v: want the binary and passwd/group only (no shell)", b.Platform(), names)
		}
		if got, want := sum(files["hello"]), fileSum(t, b.Path); got != want {
			t.Errorf("%s: layer's /hello has sha256:%s, the built binary sha256:%s", b.Platform(), got, want)
		}
		if !strings.Contains(string(files["etc/passwd"]), "nonroot:x:65532:65532:") {
			t.Errorf("%s: /etc/passwd has no nonroot user 65532:\n%s", b.Platform(), files["etc/passwd"])
		}

		// The docker tarball loads back, by its tag, as the same config and layer.
		ti, err := tarball.ImageFromPath(filepath.Join(dir, "hello-linux-"+b.Arch+".tar"), &tag)
		if err != nil {
			t.Fatalf("%s: docker tarball does not load as %s: %v", b.Platform(), tag, err)
		}
		if got, want := configName(t, ti), configName(t, img); got != want {
			t.Errorf("%s: docker tarball's config %s, the layout's %s", b.Platform(), got, want)
		}
		if got, want := layerDigests(t, ti), layerDigests(t, img); !slices.Equal(got, want) {
			t.Errorf("%s: docker tarball's layers %v, the layout's %v", b.Platform(), got, want)
		}
	}

	if err := Verify(dir, s); err != nil {
		t.Errorf("Verify on what Write wrote: %v", err)
	}
}

// TestWriteIsReproducible writes the same spec twice: the same commit gives the same digests
// and the same tarballs, byte for byte.
func TestWriteIsReproducible(t *testing.T) {
	s := helloSpec(t)
	a, b := t.TempDir(), t.TempDir()
	da, err := Write(a, s)
	if err != nil {
		t.Fatal(err)
	}
	db, err := Write(b, s)
	if err != nil {
		t.Fatal(err)
	}
	if da != db {
		t.Errorf("index digests differ: %s and %s", da, db)
	}
	for _, name := range []string{"oci/index.json", "hello-linux-amd64.tar", "hello-linux-arm64.tar"} {
		if fileSum(t, filepath.Join(a, name)) != fileSum(t, filepath.Join(b, name)) {
			t.Errorf("%s differs between two writes of the same spec", name)
		}
	}
	// Writing again over the first replaces the layout rather than adding a second index.
	if _, err := Write(a, s); err != nil {
		t.Fatal(err)
	}
	if err := Verify(a, s); err != nil {
		t.Errorf("Verify after writing twice into one folder: %v", err)
	}
}

func layerContents(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, err %v: want exactly one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	out := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := io.Copy(&buf, tr); err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s is owned by %d:%d, want root so the image's user cannot change it", h.Name, h.Uid, h.Gid)
		}
		out[h.Name] = buf.Bytes()
	}
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func fileSum(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sum(b)
}

func configName(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	h, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func layerDigests(t *testing.T, img v1.Image) []v1.Hash {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var out []v1.Hash
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}
