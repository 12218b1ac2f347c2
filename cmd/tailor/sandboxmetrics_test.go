package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics/legacyregistry"
)

// TestSandboxServesMetrics: `tailor sandbox --apply DIR` writes metrics-endpoint beside the
// kubeconfig, and the URL in it serves Tailor's metrics: once the applied pods have caused a
// launch, a karpenter_ and a tailor_ counter of it have samples. The file goes when the sandbox
// exits.
func TestSandboxServesMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane; skipped in -short mode")
	}
	dir := t.TempDir()
	copyDir(t, "testdata/prod-east", dir)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() {
		done <- runSandbox(ctx, &out, &sandboxFlags{
			kubeconfig: kubeconfig, apply: []string{dir}, cloud: "fake",
			logFile: filepath.Join(t.TempDir(), "tailor.log"), account: account{cluster: "prod-east", region: "us-east-1"},
		})
	}()
	written := filepath.Join(filepath.Dir(kubeconfig), metricsEndpointFile)
	want := []string{"karpenter_nodeclaims_created_total{", "tailor_nodeclaims_created_total"}
	// The process's registry outlives a sandbox: an earlier test's NodeClaims may already have
	// samples. This sandbox's own NodeClaim must add to them.
	before := gatheredTotal(t, "tailor_nodeclaims_created_total")
	var body string
	deadline := time.Now().Add(2 * time.Minute)
	for !servesAll(body, want) || scrapedTotal(body, "tailor_nodeclaims_created_total") <= before {
		select {
		case err := <-done:
			t.Fatalf("the sandbox exited: %v", err)
		case <-time.After(500 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sample of each of %q within 2m; last scrape:\n%s", want, body)
		}
		url, err := os.ReadFile(written)
		if err != nil {
			continue // not up yet
		}
		body = scrape(t, strings.TrimSpace(string(url)))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("tailor sandbox: %v", err)
	}
	if _, err := os.Stat(written); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is still there after the sandbox exited (%v)", written, err)
	}
}

// servesAll says whether the exposition body has a sample line for each prefix (not only its HELP
// and TYPE lines, which a metric has from registration).
func servesAll(body string, prefixes []string) bool {
	for _, p := range prefixes {
		found := false
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, p) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// gatheredTotal sums the samples of the metric family name in the process's registry.
func gatheredTotal(t *testing.T, name string) float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatalf("gathering the registry: %v", err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// scrapedTotal sums the samples of the metric name in an exposition body.
func scrapedTotal(body, name string) float64 {
	sum := 0.0
	for _, line := range strings.Split(body, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		fields := strings.Fields(rest[strings.LastIndex(rest, "}")+1:])
		if len(fields) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(fields[0], 64); err == nil {
			sum += v
		}
	}
	return sum
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Logf("scraping %s: %v", url, err)
		return ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Logf("scraping %s: %s, %v", url, resp.Status, err)
	}
	return string(b)
}
