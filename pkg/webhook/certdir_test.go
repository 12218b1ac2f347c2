package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	volumeutil "k8s.io/kubernetes/pkg/volume/util"
)

// writeSecretVolume writes a certificate pair into dir the way kubelet updates a Secret volume:
// a new timestamped folder, then the ..data symlink swapped to it.
func writeSecretVolume(t *testing.T, w *volumeutil.AtomicWriter, b bundle) {
	t.Helper()
	data, err := b.data()
	if err != nil {
		t.Fatal(err)
	}
	payload := map[string]volumeutil.FileProjection{}
	for _, k := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
		payload[k] = volumeutil.FileProjection{Data: data[k], Mode: 0o600}
	}
	if err := w.Write(payload, nil); err != nil {
		t.Fatal(err)
	}
}

func served(t *testing.T, d *dirCertificates) *x509.Certificate {
	t.Helper()
	c, err := d.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

// --webhook-cert-dir serves the pair in the folder, and the new one once kubelet has written a
// rotated Secret there.
func TestCertDirReloadsARotatedSecretVolume(t *testing.T) {
	dir := t.TempDir()
	w, err := volumeutil.NewAtomicWriter(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newDirCertificates(dir); err == nil {
		t.Fatal("an empty folder was accepted")
	}
	now := time.Now()
	first := issue(t, now, bundle{})
	writeSecretVolume(t, w, first)
	d, err := newDirCertificates(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Run(ctx)
	if got := served(t, d); !got.Equal(first.cert) {
		t.Fatalf("serving %s; want the certificate in the folder", got.Subject)
	}

	second := issue(t, now, bundle{})
	writeSecretVolume(t, w, second)
	// The watcher sees the swap at once; its fallback poll is every minute.
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return served(t, d).Equal(second.cert), nil
	}); err != nil {
		t.Fatalf("still serving the first certificate after the folder changed: %v", err)
	}
}
