package main

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"runtime/debug"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// module is one Go module as both the SBOM and a binary's build information name it.
type module struct{ Path, Version string }

func (m module) String() string { return m.Path + "@" + m.Version }

// cdxComponent is the part of a CycloneDX component the check reads. Components may nest, and
// the purl is read as well as name and version, since tools differ in which they fill in.
type cdxComponent struct {
	Name       string         `json:"name"`
	Version    string         `json:"version"`
	PURL       string         `json:"purl"`
	Components []cdxComponent `json:"components"`
}

type cdxBOM struct {
	BOMFormat  string         `json:"bomFormat"`
	Components []cdxComponent `json:"components"`
}

// readSBOM returns every Go module a CycloneDX JSON SBOM lists.
func readSBOM(data []byte) (map[module]bool, error) {
	var bom cdxBOM
	if err := json.Unmarshal(data, &bom); err != nil {
		return nil, fmt.Errorf("not CycloneDX JSON: %w", err)
	}
	if bom.BOMFormat != "CycloneDX" {
		return nil, fmt.Errorf("bomFormat is %q, want CycloneDX", bom.BOMFormat)
	}
	mods := map[module]bool{}
	var walk func([]cdxComponent)
	walk = func(cs []cdxComponent) {
		for _, c := range cs {
			if c.Name != "" && c.Version != "" {
				mods[module{c.Name, c.Version}] = true
			}
			if m, ok := golangPURL(c.PURL); ok {
				mods[m] = true
			}
			walk(c.Components)
		}
	}
	walk(bom.Components)
	if len(mods) == 0 {
		return nil, errors.New("the SBOM lists no components")
	}
	return mods, nil
}

// golangPURL reads pkg:golang/PATH@VERSION?qualifiers, the package URL of a Go module.
func golangPURL(purl string) (module, bool) {
	rest, ok := strings.CutPrefix(purl, "pkg:golang/")
	if !ok {
		return module{}, false
	}
	rest, _, _ = strings.Cut(rest, "?")
	rest, _, _ = strings.Cut(rest, "#")
	p, v, ok := strings.Cut(rest, "@")
	if !ok {
		return module{}, false
	}
	p, err1 := url.PathUnescape(p)
	v, err2 := url.PathUnescape(v)
	if err1 != nil || err2 != nil {
		return module{}, false
	}
	return module{p, v}, true
}

// binaryModules lists the modules linked into a binary, as the linker recorded them: a
// replaced module counts at its replacement's path and version, which is the code in it.
func binaryModules(bi *debug.BuildInfo) []module {
	var mods []module
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		mods = append(mods, module{d.Path, d.Version})
	}
	return mods
}

// missingModules is every module of the binary that the SBOM does not list at the same version,
// sorted. An empty result is the SBOM accounting for all the code in the binary.
func missingModules(sbom map[module]bool, bin []module) []string {
	var missing []string
	for _, m := range bin {
		if !sbom[m] {
			missing = append(missing, m.String())
		}
	}
	sort.Strings(missing)
	return missing
}

// checkSBOM fails if a binary holds a module the SBOM leaves out or lists at another version.
func checkSBOM(sbom map[module]bool, name string, bi *debug.BuildInfo) error {
	bin := binaryModules(bi)
	if len(bin) == 0 {
		return fmt.Errorf("%s: the binary records no modules (built without module support?)", name)
	}
	if missing := missingModules(sbom, bin); len(missing) > 0 {
		return fmt.Errorf("%s: %d of its %d modules are not in the SBOM at the version linked: %s",
			name, len(missing), len(bin), strings.Join(missing, ", "))
	}
	return nil
}

// layoutBinaries reads the binary named name out of every platform image in an OCI layout that
// make image wrote (index.json → the release's index → one image per platform), keyed by
// platform. It reads the layers themselves, so it checks what ships, not the build folder.
func layoutBinaries(dir, name string) (map[string][]byte, error) {
	idx, _, err := releaseIndex(dir)
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, desc := range im.Manifests {
		img, err := idx.Image(desc.Digest)
		if err != nil {
			return nil, err
		}
		b, err := imageFile(img, name)
		if err != nil {
			return nil, fmt.Errorf("%s image %s: %w", desc.Platform, desc.Digest, err)
		}
		out[desc.Platform.String()] = b
	}
	return out, nil
}

// imageFile returns a file's bytes from an image's layers, the top layer's copy winning.
func imageFile(img v1.Image, name string) ([]byte, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	for i := len(layers) - 1; i >= 0; i-- {
		b, err := layerFile(layers[i], name)
		if err != nil || b != nil {
			return b, err
		}
	}
	return nil, fmt.Errorf("no /%s in any layer", name)
}

func layerFile(l v1.Layer, name string) ([]byte, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if path.Clean(strings.TrimPrefix(h.Name, "/")) == name && h.Typeflag == tar.TypeReg {
			return io.ReadAll(tr)
		}
	}
}

// verifySBOM checks the SBOM against the binary of every platform of the image in layoutDir and
// returns one line per platform for the log.
func verifySBOM(sbomPath, layoutDir, binary string) ([]string, error) {
	data, err := os.ReadFile(sbomPath)
	if err != nil {
		return nil, err
	}
	sbom, err := readSBOM(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sbomPath, err)
	}
	bins, err := layoutBinaries(layoutDir, binary)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, platform := range sortedKeys(bins) {
		bi, err := buildinfo.Read(bytes.NewReader(bins[platform]))
		if err != nil {
			return nil, fmt.Errorf("%s /%s: no Go build information: %w", platform, binary, err)
		}
		if err := checkSBOM(sbom, platform+" /"+binary, bi); err != nil {
			return nil, err
		}
		lines = append(lines, fmt.Sprintf("SBOM verified: %s /%s (%s, main %s): all %d modules in %s at the linked version",
			platform, binary, bi.GoVersion, bi.Main.Path, len(bi.Deps), sbomPath))
	}
	return lines, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
