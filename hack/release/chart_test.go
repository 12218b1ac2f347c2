package main

import (
	"path/filepath"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

func TestCheckVersion(t *testing.T) {
	for v, ok := range map[string]bool{
		"v0.3.0": true, "v1.2.3-rc.1": true, "v0.0.0-dryrun": true, "v1.0.0+build.5": true,
		"0.3.0": false, "v0.3": false, "v01.2.3": false, "33f61dc": false, "v1.2.3-": false, "": false,
	} {
		if err := checkVersion(v); (err == nil) != ok {
			t.Errorf("checkVersion(%q) = %v, want accepted: %v", v, err, ok)
		}
	}
}

// TestPackageChartFollowsTheTag packages the real chart and reads the archive back: the chart's
// version is the tag without v, appVersion (the default image tag) is the tag.
func TestPackageChartFollowsTheTag(t *testing.T) {
	p, err := packageChart(filepath.Join("..", "..", "charts", "tailor"), "v1.2.3-rc.1", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(p) != "tailor-1.2.3-rc.1.tgz" {
		t.Errorf("packaged as %s, want tailor-1.2.3-rc.1.tgz", filepath.Base(p))
	}
	c, err := loader.Load(p)
	if err != nil {
		t.Fatalf("loading the packaged chart: %v", err)
	}
	if c.Metadata.Version != "1.2.3-rc.1" || c.Metadata.AppVersion != "v1.2.3-rc.1" {
		t.Errorf("version %q, appVersion %q; want 1.2.3-rc.1 and v1.2.3-rc.1", c.Metadata.Version, c.Metadata.AppVersion)
	}
	if len(c.CRDObjects()) == 0 || len(c.Templates) == 0 {
		t.Errorf("the packaged chart has %d CRDs and %d templates, want the chart's", len(c.CRDObjects()), len(c.Templates))
	}
	if _, err := packageChart(filepath.Join("..", "..", "charts", "tailor"), "1.2.3", t.TempDir()); err == nil {
		t.Error("packageChart accepted a version without v")
	}
}
