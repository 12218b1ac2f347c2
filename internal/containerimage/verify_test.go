package containerimage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// TestVerifyFindsFaults breaks one thing at a time in a good output, or expects something
// else of it, and checks that Verify fails and says what.
func TestVerifyFindsFaults(t *testing.T) {
	cases := []struct {
		name string
		// breakIt changes the written output under dir or the spec Verify expects.
		breakIt func(t *testing.T, dir string, s *Spec)
		want    []string
	}{{
		name: "the binary on disk is not the one in the image",
		breakIt: func(t *testing.T, _ string, s *Spec) {
			copyFile(t, binaryFor(t, *s, "arm64").Path, binaryFor(t, *s, "amd64").Path)
		},
		want: []string{"built for EM_AARCH64, not linux/amd64", "layer entry 3 is hello", "but an image of", "linux-amd64/hello would hold"},
	}, {
		name:    "another version was expected",
		breakIt: func(_ *testing.T, _ string, s *Spec) { s.Version = "v9" },
		want:    []string{`the index is named "v0.0.1-test"`, `want "v9"`},
	}, {
		name:    "another revision was expected",
		breakIt: func(_ *testing.T, _ string, s *Spec) { s.Revision = "feedface" },
		want:    []string{"image hello for linux/amd64", "image hello for linux/arm64", `config label org.opencontainers.image.revision is "0123456789abcdef0123456789abcdef01234567", want "feedface"`},
	}, {
		name: "a platform more than was built",
		breakIt: func(_ *testing.T, _ string, s *Spec) {
			s.Binaries = append(s.Binaries, Binary{OS: "linux", Arch: "s390x", Path: "x"})
		},
		want: []string{"lists platforms [linux/amd64 linux/arm64], want exactly [linux/amd64 linux/arm64 linux/s390x]"},
	}, {
		name: "a platform's tarball holds the other platform",
		breakIt: func(t *testing.T, dir string, s *Spec) {
			copyFile(t, filepath.Join(dir, "hello-linux-arm64.tar"), filepath.Join(dir, "hello-linux-amd64.tar"))
		},
		want: []string{"hello-linux-amd64.tar: config sha256:", "differs from the OCI layout's"},
	}, {
		name: "a tarball is missing",
		breakIt: func(t *testing.T, dir string, s *Spec) {
			if err := os.Remove(filepath.Join(dir, "hello-linux-arm64.tar")); err != nil {
				t.Fatal(err)
			}
		},
		want: []string{"hello-linux-arm64.tar does not load as example.test/team/hello:v0.0.1-test"},
	}, {
		name: "the amd64 layer blob was changed",
		breakIt: func(t *testing.T, dir string, s *Spec) {
			overwriteBlob(t, dir, layerDigest(t, dir, "amd64"))
		},
		want: []string{"the index does not match its blobs", "failed to validate image Manifests[0]"},
	}, {
		name: "the index blob was changed",
		breakIt: func(t *testing.T, dir string, s *Spec) {
			root, err := layout.ImageIndexFromPath(filepath.Join(dir, "oci"))
			if err != nil {
				t.Fatal(err)
			}
			m, err := root.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			overwriteBlob(t, dir, m.Manifests[0].Digest)
		},
		want: []string{"the index blob is sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a (2 bytes), index.json says"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := ownBinaries(t, helloSpec(t))
			dir := t.TempDir()
			if _, err := Write(dir, s); err != nil {
				t.Fatal(err)
			}
			tc.breakIt(t, dir, &s)
			err := Verify(dir, s)
			if err == nil {
				t.Fatal("Verify passed")
			}
			t.Logf("Verify says: %v", err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Verify says:\n%v\nwant it to say %q", err, w)
				}
			}
		})
	}
}

// ownBinaries copies s's binaries into the test's own folder, so a case may overwrite them.
func ownBinaries(t *testing.T, s Spec) Spec {
	t.Helper()
	dir := t.TempDir()
	for i, b := range s.Binaries {
		p := filepath.Join(dir, b.OS+"-"+b.Arch, s.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		copyFile(t, b.Path, p)
		s.Binaries[i].Path = p
	}
	return s
}

func TestSpecValidate(t *testing.T) {
	cases := map[string]struct {
		change func(*Spec)
		want   string
	}{
		"a path for a name":    {func(s *Spec) { s.Name = "bin/hello" }, `image name "bin/hello"`},
		"a version with a '+'": {func(s *Spec) { s.Version = "v1+x" }, `image version "v1+x" is not a valid tag`},
		"no creation time":     {func(s *Spec) { s.Created = time.Time{} }, "SOURCE_DATE_EPOCH"},
		"a platform twice":     {func(s *Spec) { s.Binaries = append(s.Binaries, s.Binaries[0]) }, "platform linux/amd64 is listed twice"},
		"no binaries":          {func(s *Spec) { s.Binaries = nil }, "has no binaries"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := helloSpec(t)
			tc.change(&s)
			err := s.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate: %v, want it to say %q", err, tc.want)
			}
		})
	}
}

func overwriteBlob(t *testing.T, dir string, h v1.Hash) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "oci", "blobs", h.Algorithm, h.Hex), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// layerDigest is the digest of the image layer for arch in the layout under dir.
func layerDigest(t *testing.T, dir, arch string) v1.Hash {
	t.Helper()
	root, err := layout.ImageIndexFromPath(filepath.Join(dir, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	idx, err := root.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range im.Manifests {
		if d.Platform.Architecture == arch {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			return layerDigests(t, img)[0]
		}
	}
	t.Fatalf("no %s image in the layout", arch)
	return v1.Hash{}
}
