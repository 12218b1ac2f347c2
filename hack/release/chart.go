package main

import (
	"fmt"
	"regexp"
	"strings"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// semverRE is a tag as releases are named: v, then a semantic version (semver.org 2.0.0, with
// optional pre-release and build parts).
var semverRE = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// checkVersion refuses a release version that is not v + a semantic version, before anything is
// built with it.
func checkVersion(v string) error {
	if !semverRE.MatchString(v) {
		return fmt.Errorf("version %q is not a release version: want v + a semantic version, e.g. v0.3.0 or v0.3.0-rc.1", v)
	}
	return nil
}

// chartVersions is the chart's version and appVersion for a release tag. The chart's version
// is the tag without its v, as Helm and OCI chart references spell versions; appVersion is the
// tag itself, since the chart's default image tag is appVersion and make image tags the image
// with the tag.
func chartVersions(tag string) (version, appVersion string) {
	return strings.TrimPrefix(tag, "v"), tag
}

// packageChart writes the chart in dir as OUT/NAME-VERSION.tgz with the release's versions, the
// same archive `helm package --version V --app-version TAG` writes, and returns its path.
func packageChart(dir, tag, out string) (string, error) {
	if err := checkVersion(tag); err != nil {
		return "", err
	}
	c, err := loader.LoadDir(dir)
	if err != nil {
		return "", fmt.Errorf("loading the chart %s: %w", dir, err)
	}
	c.Metadata.Version, c.Metadata.AppVersion = chartVersions(tag)
	p, err := chartutil.Save(c, out)
	if err != nil {
		return "", fmt.Errorf("packaging the chart %s: %w", dir, err)
	}
	return p, nil
}
