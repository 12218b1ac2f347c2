package containerimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// Verify reads back what Write wrote under dir and reports every way it differs from s: the
// layout holds one index, tagged s.Version, that lists exactly s's platforms; every blob
// matches its digest; each platform's config runs s's binary as User with s's labels; its one
// layer holds exactly the binary at Binary.Path, byte for byte, and the passwd/group pair; and
// each docker tarball loads back, under s's tag, as that same config and layer.
func Verify(dir string, s Spec) error {
	if err := s.Validate(); err != nil {
		return err
	}
	idx, err := layoutIndex(dir, s)
	if err != nil {
		return err
	}
	if err := validate.Index(idx); err != nil {
		return fmt.Errorf("OCI layout %s: the index does not match its blobs: %w", LayoutDir(dir), err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	var got, want []string
	byPlatform := map[string]v1.Descriptor{}
	for _, d := range im.Manifests {
		if d.Platform == nil {
			got = append(got, "(none)")
			continue
		}
		p := d.Platform.OS + "/" + d.Platform.Architecture
		got = append(got, p)
		byPlatform[p] = d
	}
	for _, b := range s.Binaries {
		want = append(want, b.Platform())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("OCI layout %s: the index lists platforms %v, want exactly %v", LayoutDir(dir), got, want)
	}
	var errs []error
	for _, b := range s.Binaries {
		if err := checkStatic(b); err != nil {
			errs = append(errs, err)
		}
		img, err := idx.Image(byPlatform[b.Platform()].Digest)
		if err != nil {
			errs = append(errs, fmt.Errorf("image %s for %s: %w", s.Name, b.Platform(), err))
			continue
		}
		for _, err := range checkImage(s, b, img) {
			errs = append(errs, fmt.Errorf("image %s for %s in %s: %w", s.Name, b.Platform(), LayoutDir(dir), err))
		}
		if err := checkTarball(dir, s, b, img); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// layoutIndex is the one index the layout under dir holds, checked to carry s's version.
func layoutIndex(dir string, s Spec) (v1.ImageIndex, error) {
	ld := LayoutDir(dir)
	root, err := layout.ImageIndexFromPath(ld)
	if err != nil {
		return nil, fmt.Errorf("reading the OCI layout %s (run the build first): %w", ld, err)
	}
	rm, err := root.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("OCI layout %s: %w", ld, err)
	}
	if len(rm.Manifests) != 1 || !rm.Manifests[0].MediaType.IsIndex() {
		return nil, fmt.Errorf("OCI layout %s: index.json lists %d entries, want one image index", ld, len(rm.Manifests))
	}
	d := rm.Manifests[0]
	if got := d.Annotations[RefName]; got != s.Version {
		return nil, fmt.Errorf("OCI layout %s: the index is named %q (%s), want %q", ld, got, RefName, s.Version)
	}
	idx, err := root.ImageIndex(d.Digest)
	if err != nil {
		return nil, fmt.Errorf("OCI layout %s: %w", ld, err)
	}
	// Children are checked against the index (validate.Index), the index only against this.
	raw, err := idx.RawManifest()
	if err != nil {
		return nil, fmt.Errorf("OCI layout %s: %w", ld, err)
	}
	if got := "sha256:" + digest(raw); got != d.Digest.String() || int64(len(raw)) != d.Size {
		return nil, fmt.Errorf("OCI layout %s: the index blob is %s (%d bytes), index.json says %s (%d bytes)", ld, got, len(raw), d.Digest, d.Size)
	}
	return idx, nil
}

// checkImage compares one platform's manifest, config and layer with s and b.
func checkImage(s Spec, b Binary, img v1.Image) []error {
	var errs []error
	if mt, err := img.MediaType(); err != nil || mt != types.OCIManifestSchema1 {
		errs = append(errs, fmt.Errorf("manifest media type %q (%v), want %q", mt, err, types.OCIManifestSchema1))
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return append(errs, fmt.Errorf("config: %w", err))
	}
	if cf.OS != b.OS || cf.Architecture != b.Arch {
		errs = append(errs, fmt.Errorf("config is for %s/%s", cf.OS, cf.Architecture))
	}
	if cf.Config.User != User {
		errs = append(errs, fmt.Errorf("config runs as user %q, want %q", cf.Config.User, User))
	}
	if want := []string{s.Entrypoint()}; !slices.Equal(cf.Config.Entrypoint, want) || len(cf.Config.Cmd) != 0 {
		errs = append(errs, fmt.Errorf("config entrypoint %q and cmd %q, want entrypoint %q and no cmd", cf.Config.Entrypoint, cf.Config.Cmd, want))
	}
	errs = append(errs, labelDiff(cf.Config.Labels, s.Labels())...)
	if !cf.Created.Equal(s.Created) {
		errs = append(errs, fmt.Errorf("config created %s, want %s", cf.Created.Time, s.Created))
	}
	layers, err := img.Layers()
	if err != nil {
		return append(errs, fmt.Errorf("layers: %w", err))
	}
	if len(layers) != 1 {
		return append(errs, fmt.Errorf("%d layers, want 1", len(layers)))
	}
	return append(errs, checkLayer(s, b, layers[0])...)
}

// labelDiff names each label that differs from want.
func labelDiff(got, want map[string]string) []error {
	var errs []error
	keys := maps.Clone(want)
	maps.Copy(keys, got)
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		g, gok := got[k]
		w, wok := want[k]
		switch {
		case !wok:
			errs = append(errs, fmt.Errorf("config label %s is %q, want none", k, g))
		case !gok:
			errs = append(errs, fmt.Errorf("config label %s is missing, want %q", k, w))
		case g != w:
			errs = append(errs, fmt.Errorf("config label %s is %q, want %q", k, g, w))
		}
	}
	return errs
}

// entry is what Verify compares of a layer's tar entry: the content by its digest, so a
// mismatch reads as two digests rather than two 80 MB strings.
type entry struct {
	name     string
	typeflag byte
	mode     int64
	uid, gid int
	size     int64
	sha256   string
}

func (e entry) String() string {
	return fmt.Sprintf("%s (type %q, mode %o, owner %d:%d, %d bytes, sha256:%s)", e.name, e.typeflag, e.mode, e.uid, e.gid, e.size, e.sha256)
}

// checkLayer compares the layer's entries with those Image writes for the binary at b.Path.
func checkLayer(s Spec, b Binary, l v1.Layer) []error {
	bin, err := os.ReadFile(b.Path)
	if err != nil {
		return []error{fmt.Errorf("reading the binary to compare with the layer: %w", err)}
	}
	var want []entry
	for _, f := range layerFiles(s, bin) {
		e := entry{name: f.name, typeflag: tar.TypeReg, mode: f.mode, size: int64(len(f.data)), sha256: digest(f.data)}
		if f.dir {
			e.typeflag = tar.TypeDir
		}
		want = append(want, e)
	}
	got, err := layerEntries(l)
	if err != nil {
		return []error{fmt.Errorf("reading the layer: %w", err)}
	}
	var errs []error
	if len(got) != len(want) {
		errs = append(errs, fmt.Errorf("the layer holds %d entries, want %d: %v", len(got), len(want), got))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			errs = append(errs, fmt.Errorf("layer entry %d is %v, but an image of %s would hold %v", i, got[i], b.Path, want[i]))
		}
	}
	return errs
}

func layerEntries(l v1.Layer) ([]entry, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, err
	}
	defer func() { _ = rc.Close() }()
	var out []entry
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		sum := sha256.New()
		if _, err := io.Copy(sum, tr); err != nil {
			return nil, fmt.Errorf("entry %s: %w", h.Name, err)
		}
		out = append(out, entry{
			name: strings.TrimPrefix(h.Name, "/"), typeflag: h.Typeflag, mode: h.Mode,
			uid: h.Uid, gid: h.Gid, size: h.Size, sha256: hex.EncodeToString(sum.Sum(nil)),
		})
	}
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// checkTarball loads b's docker tarball the way `crane push` and kind's loader read it, by
// s's tag, and checks that it is img: the same config blob and the same layer blobs.
func checkTarball(dir string, s Spec, b Binary, img v1.Image) error {
	p := TarballPath(dir, s, b)
	tag, err := s.Tag()
	if err != nil {
		return err
	}
	ti, err := tarball.ImageFromPath(p, &tag)
	if err != nil {
		return fmt.Errorf("docker tarball %s does not load as %s: %w", p, tag, err)
	}
	gotCfg, err := ti.RawConfigFile()
	if err != nil {
		return fmt.Errorf("docker tarball %s: config: %w", p, err)
	}
	wantCfg, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	if !bytes.Equal(gotCfg, wantCfg) {
		return fmt.Errorf("docker tarball %s: config sha256:%s differs from the OCI layout's sha256:%s for %s", p, digest(gotCfg), digest(wantCfg), b.Platform())
	}
	gl, err := ti.Layers()
	if err != nil {
		return fmt.Errorf("docker tarball %s: layers: %w", p, err)
	}
	wl, err := img.Layers()
	if err != nil {
		return err
	}
	if len(gl) != len(wl) {
		return fmt.Errorf("docker tarball %s: %d layers, the OCI layout's image for %s has %d", p, len(gl), b.Platform(), len(wl))
	}
	for i := range gl {
		g, gerr := gl[i].Digest()
		w, werr := wl[i].Digest()
		if err := errors.Join(gerr, werr); err != nil {
			return fmt.Errorf("docker tarball %s: layer %d: %w", p, i, err)
		}
		if g != w {
			return fmt.Errorf("docker tarball %s: layer %d is %s, the OCI layout's image for %s has %s", p, i, g, b.Platform(), w)
		}
	}
	if err := validate.Image(ti); err != nil {
		return fmt.Errorf("docker tarball %s: the image does not match its blobs: %w", p, err)
	}
	return nil
}
