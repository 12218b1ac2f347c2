package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

// metricsEndpointFile, beside the kubeconfig, holds the URL of the running sandbox's /metrics, so
// that a Prometheus, a curl or a test can find it without reading the sandbox's output.
const metricsEndpointFile = "metrics-endpoint"

// sandboxMetrics is the sandbox's /metrics: the registry the scheduler's secure port serves in a
// cluster (kube-scheduler's own metrics, Tailor's tailor_* and Karpenter's karpenter_* names), on
// plain HTTP, since nothing but this machine can reach it.
type sandboxMetrics struct {
	server  *http.Server
	url     string
	written string
}

// serveSandboxMetrics listens on addr (host:port; port 0 picks a free one), serves /metrics there
// and writes its URL to metrics-endpoint in dir.
func serveSandboxMetrics(ctx context.Context, addr, dir string) (*sandboxMetrics, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serving the sandbox's metrics on --metrics-address=%s: %w (pick another address, or :0 for any free port)", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", legacyregistry.Handler())
	m := &sandboxMetrics{
		server: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		url:    "http://" + l.Addr().String() + "/metrics",
	}
	go func() {
		if err := m.server.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "sandbox metrics server stopped", "address", l.Addr().String())
		}
	}()
	m.written = filepath.Join(dir, metricsEndpointFile)
	if err := os.WriteFile(m.written, []byte(m.url+"\n"), 0o600); err != nil {
		_ = m.server.Close()
		return nil, err
	}
	return m, nil
}

// Close stops serving and removes metrics-endpoint, which would otherwise name a port nothing
// listens on.
func (m *sandboxMetrics) Close() {
	_ = os.Remove(m.written)
	_ = m.server.Close()
}
