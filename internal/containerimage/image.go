package containerimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// file is one entry of the image's only layer.
type file struct {
	name string // relative to /, as in docker-save and OCI layer tars
	mode int64
	dir  bool
	data []byte
}

// layerFiles lists the layer's entries in the order they are written, for one binary.
func layerFiles(s Spec, binary []byte) []file {
	return []file{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		// Owned by root and not writable by the user it runs as.
		{name: s.Name, mode: 0o755, data: binary},
	}
}

// layerTar writes files as a tar whose bytes depend only on the files and the time: owner
// 0:0 without names, one mtime for all, the same header format every time.
func layerTar(files []file, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name:    f.name,
			Mode:    f.mode,
			Size:    int64(len(f.data)),
			ModTime: mtime,
		}
		h.Typeflag = tar.TypeReg
		if f.dir {
			h.Typeflag = tar.TypeDir
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Image builds the image of one binary: one layer on nothing, run as User.
func Image(s Spec, b Binary) (v1.Image, error) {
	bin, err := os.ReadFile(b.Path)
	if err != nil {
		return nil, fmt.Errorf("image %s for %s: reading the binary: %w", s.Name, b.Platform(), err)
	}
	raw, err := layerTar(layerFiles(s, bin), s.Created.UTC().Truncate(time.Second))
	if err != nil {
		return nil, fmt.Errorf("image %s for %s: %w", s.Name, b.Platform(), err)
	}
	layer, err := tarball.LayerFromOpener(
		func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil },
		tarball.WithMediaType(types.OCILayer),
		// The layout and each tarball read the compressed bytes again: gzip once.
		tarball.WithCompressedCaching,
	)
	if err != nil {
		return nil, fmt.Errorf("image %s for %s: layer: %w", s.Name, b.Platform(), err)
	}
	created := v1.Time{Time: s.Created.UTC()}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: created, CreatedBy: "hack/image: " + s.Name + " and /etc/passwd, /etc/group"},
	})
	if err != nil {
		return nil, fmt.Errorf("image %s for %s: %w", s.Name, b.Platform(), err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = b.OS, b.Arch
	cf.Created = created
	cf.Config = v1.Config{
		User:       User,
		Entrypoint: []string{s.Entrypoint()},
		WorkingDir: "/",
		Labels:     s.Labels(),
	}
	return mutate.ConfigFile(img, cf)
}

// Index builds every platform's image and the index that lists them with their platforms.
// The images are returned too, in the order of s.Binaries, for the per-platform tarballs.
func Index(s Spec) (v1.ImageIndex, []v1.Image, error) {
	if err := s.Validate(); err != nil {
		return nil, nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	imgs := make([]v1.Image, 0, len(s.Binaries))
	for _, b := range s.Binaries {
		img, err := Image(s, b)
		if err != nil {
			return nil, nil, err
		}
		imgs = append(imgs, img)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: b.OS, Architecture: b.Arch}},
		})
	}
	return idx, imgs, nil
}
