package charts

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The chart's crds/ is a copy of manifests/crds, which hack/generate.sh writes from the API
// types and copies here (`make verify-generate` checks both); a hand edit of either shows here.
func TestChartCRDsAreTheGeneratedOnes(t *testing.T) {
	generated, err := filepath.Glob("../manifests/crds/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	inChart, err := filepath.Glob(filepath.Join(chartDir, "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	base := func(paths []string) []string {
		out := make([]string, len(paths))
		for i, p := range paths {
			out[i] = filepath.Base(p)
		}
		return out
	}
	if len(generated) == 0 || !slices.Equal(base(generated), base(inChart)) {
		t.Fatalf("manifests/crds has %v, the chart's crds/ %v: run make generate", base(generated), base(inChart))
	}
	for _, g := range generated {
		want, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(chartDir, "crds", filepath.Base(g)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from manifests/crds: run make generate", filepath.Base(g))
		}
	}
}
