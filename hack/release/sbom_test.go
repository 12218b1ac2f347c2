package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/tailor-sh/tailor/internal/containerimage"
)

// sbomJSON is a CycloneDX SBOM shaped as cyclonedx-gomod writes one: name, version and purl per
// module, the main module apart in metadata.
func sbomJSON(t *testing.T, mods ...module) []byte {
	t.Helper()
	type comp struct {
		Type    string `json:"type"`
		Name    string `json:"name"`
		Version string `json:"version"`
		PURL    string `json:"purl"`
	}
	bom := struct {
		BOMFormat  string `json:"bomFormat"`
		Components []comp `json:"components"`
	}{BOMFormat: "CycloneDX"}
	for _, m := range mods {
		bom.Components = append(bom.Components, comp{"library", m.Path, m.Version, "pkg:golang/" + m.Path + "@" + m.Version + "?type=module"})
	}
	b, err := json.Marshal(bom)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func buildInfo(deps ...*debug.Module) *debug.BuildInfo {
	return &debug.BuildInfo{GoVersion: "go1.26.8", Path: "example.test/cmd/x", Main: debug.Module{Path: "example.test"}, Deps: deps}
}

func TestCheckSBOM(t *testing.T) {
	yaml := &debug.Module{Path: "sigs.k8s.io/yaml", Version: "v1.6.0"}
	api := &debug.Module{Path: "k8s.io/api", Version: "v0.0.0", Replace: &debug.Module{Path: "k8s.io/api", Version: "v0.36.3"}}
	bi := buildInfo(yaml, api)
	for _, tc := range []struct {
		name    string
		sbom    []module
		wantErr string // empty: accepted
	}{
		{"every module at its version", []module{{"sigs.k8s.io/yaml", "v1.6.0"}, {"k8s.io/api", "v0.36.3"}, {"extra.test/m", "v1.0.0"}}, ""},
		{"a module missing", []module{{"k8s.io/api", "v0.36.3"}}, "1 of its 2 modules are not in the SBOM at the version linked: sigs.k8s.io/yaml@v1.6.0"},
		{"a module at another version", []module{{"sigs.k8s.io/yaml", "v1.5.0"}, {"k8s.io/api", "v0.36.3"}}, "sigs.k8s.io/yaml@v1.6.0"},
		{"a replaced module at the version it replaces", []module{{"sigs.k8s.io/yaml", "v1.6.0"}, {"k8s.io/api", "v0.0.0"}}, "k8s.io/api@v0.36.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sbom, err := readSBOM(sbomJSON(t, tc.sbom...))
			if err != nil {
				t.Fatal(err)
			}
			err = checkSBOM(sbom, "x", bi)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("checkSBOM refused a complete SBOM: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("checkSBOM = %v, want an error naming %q", err, tc.wantErr)
			}
		})
	}
}

func TestReadSBOMRefusesWhatIsNotAnSBOM(t *testing.T) {
	for _, in := range []string{`{"bomFormat":"SPDX","components":[{"name":"a","version":"v1"}]}`, `{"bomFormat":"CycloneDX"}`, `[`} {
		if _, err := readSBOM([]byte(in)); err == nil {
			t.Errorf("readSBOM(%s) accepted it", in)
		}
	}
}

func TestGolangPURL(t *testing.T) {
	for in, want := range map[string]module{
		"pkg:golang/github.com/a/b@v1.2.3?type=module":     {"github.com/a/b", "v1.2.3"},
		"pkg:golang/github.com/a/b/v2@v2.0.0-20260101-abc": {"github.com/a/b/v2", "v2.0.0-20260101-abc"},
		"pkg:golang/github.com/a/b@v1.2.3%2Bincompatible":  {"github.com/a/b", "v1.2.3+incompatible"},
		"pkg:npm/left-pad@1.0.0":                           {},
		"pkg:golang/github.com/a/b":                        {},
	} {
		got, ok := golangPURL(in)
		if got != want || ok != (want != module{}) {
			t.Errorf("golangPURL(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
}

// TestVerifySBOMReadsTheImage writes this test's own binary, which records the modules it links,
// as an image in an OCI layout the way make image does, and checks it against two SBOMs: one
// listing every module passes, one missing a module fails and names it.
func TestVerifySBOMReadsTheImage(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeLayout(t, dir, exe)
	bi, ok := debug.ReadBuildInfo()
	if !ok || len(bi.Deps) < 2 {
		t.Fatalf("the test binary records %d modules, want several", len(bi.Deps))
	}
	mods := binaryModules(bi)
	full := filepath.Join(dir, "full.cdx.json")
	short := filepath.Join(dir, "short.cdx.json")
	if err := os.WriteFile(full, sbomJSON(t, mods...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(short, sbomJSON(t, mods[1:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	lines, err := verifySBOM(full, containerimage.LayoutDir(dir), "x")
	if err != nil || len(lines) != 1 {
		t.Fatalf("verifySBOM with every module = %q, %v; want one line per platform", lines, err)
	}
	_, err = verifySBOM(short, containerimage.LayoutDir(dir), "x")
	if err == nil || !strings.Contains(err.Error(), mods[0].String()) {
		t.Errorf("verifySBOM without %s = %v, want it refused, naming the module", mods[0], err)
	}
}

// writeLayout writes bin as /x in a one-platform image index, as make image lays one out.
func writeLayout(t *testing.T, dir, bin string) {
	t.Helper()
	s := containerimage.Spec{
		Name: "x", Repository: "x", Version: "v0.0.0-test", Source: "https://example.test/x",
		Created: time.Unix(1, 0), Binaries: []containerimage.Binary{{OS: "linux", Arch: "amd64", Path: bin}},
	}
	idx, _, err := containerimage.Index(s)
	if err != nil {
		t.Fatal(err)
	}
	lp, err := layout.Write(containerimage.LayoutDir(dir), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendIndex(idx); err != nil {
		t.Fatal(err)
	}
}
