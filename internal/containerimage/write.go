package containerimage

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// LayoutDir is where Write puts the OCI image layout (the multi-platform index), under dir.
// `crane push` takes it as it is.
func LayoutDir(dir string) string { return filepath.Join(dir, "oci") }

// TarballPath is where Write puts b's docker-save tarball, under dir. `docker load`,
// `kind load image-archive` and `crane push` take it.
func TarballPath(dir string, s Spec, b Binary) string {
	return filepath.Join(dir, fmt.Sprintf("%s-%s-%s.tar", s.Name, b.OS, b.Arch))
}

// Tag is the name the tarballs carry: Repository:Version.
func (s Spec) Tag() (name.Tag, error) {
	t, err := name.NewTag(s.Repository + ":" + s.Version)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image repository %q and version %q make no valid image name: %w", s.Repository, s.Version, err)
	}
	return t, nil
}

// Write builds s and writes, under dir, the OCI layout holding the index of every platform and
// one docker-save tarball per platform. It replaces what an earlier Write left there and
// touches nothing else in dir. It returns the index's digest.
func Write(dir string, s Spec) (v1.Hash, error) {
	idx, imgs, err := Index(s)
	if err != nil {
		return v1.Hash{}, err
	}
	tag, err := s.Tag()
	if err != nil {
		return v1.Hash{}, err
	}
	// A layout is appended to, never rewritten: start from an empty one, or the index of an
	// earlier build would sit beside this one.
	ld := LayoutDir(dir)
	if err := os.RemoveAll(ld); err != nil {
		return v1.Hash{}, fmt.Errorf("removing the earlier OCI layout %s: %w", ld, err)
	}
	lp, err := layout.Write(ld, empty.Index)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("writing the OCI layout %s: %w", ld, err)
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefName: s.Version})); err != nil {
		return v1.Hash{}, fmt.Errorf("writing image %s's index to the OCI layout %s: %w", s.Name, ld, err)
	}
	for i, b := range s.Binaries {
		p := TarballPath(dir, s, b)
		if err := tarball.WriteToFile(p, tag, imgs[i]); err != nil {
			return v1.Hash{}, fmt.Errorf("writing image %s for %s to %s: %w", s.Name, b.Platform(), p, err)
		}
	}
	return idx.Digest()
}
