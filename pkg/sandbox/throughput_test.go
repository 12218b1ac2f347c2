package sandbox

import (
	"crypto/tls"
	"net/url"
	"path/filepath"
	"testing"

	"golang.org/x/net/http2"
	"k8s.io/client-go/rest"
)

// The fleet's API server lets a client keep thousands of requests open on one connection: the
// limit it announces in its first HTTP/2 SETTINGS frame is FleetThroughput's, not its default.
func TestTheFleetsAPIServerTakesThousandsOfStreamsOnAConnection(t *testing.T) {
	want := FleetThroughput().StreamsPerConnection
	flags, err := controlPlaneFlags(t, Options{Throughput: FleetThroughput()})
	if err != nil {
		t.Fatal(err)
	}
	cp, err := StartControlPlane(t, filepath.Join(t.TempDir(), "etcd"), flags...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	if got := maxStreams(t, cp.Config); got != uint32(want) {
		t.Errorf("the API server announces %d streams a connection; want %d", got, want)
	}
}

// maxStreams dials the API server of cfg over HTTP/2 and returns the SETTINGS_MAX_CONCURRENT_STREAMS
// it announces.
func maxStreams(t *testing.T, cfg *rest.Config) uint32 {
	t.Helper()
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig.NextProtos = []string{http2.NextProtoTLS}
	host, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", host.Host, tlsConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	if p := conn.ConnectionState().NegotiatedProtocol; p != http2.NextProtoTLS {
		t.Fatalf("the API server speaks %q, not HTTP/2", p)
	}
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	framer := http2.NewFramer(conn, conn)
	if err := framer.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	for {
		frame, err := framer.ReadFrame()
		if err != nil {
			t.Fatalf("reading the server's settings: %v", err)
		}
		settings, ok := frame.(*http2.SettingsFrame)
		if !ok || settings.IsAck() {
			continue
		}
		if v, ok := settings.Value(http2.SettingMaxConcurrentStreams); ok {
			return v
		}
		t.Fatal("the server's settings leave the streams a connection unlimited")
	}
}
