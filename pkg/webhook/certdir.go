package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"path/filepath"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// dirCertificates serves tls.crt and tls.key from a folder that someone else keeps current, as
// kubelet does for a Secret volume that cert-manager rotates. kube-apiserver's own file watcher
// (inotify, and a poll every minute in case a watch is lost) notices new content.
type dirCertificates struct {
	files *dynamiccertificates.DynamicCertKeyPairContent

	mu              sync.Mutex
	certPEM, keyPEM []byte
	cert            *tls.Certificate
}

// newDirCertificates reads the pair at once, so a missing or broken one fails the start.
func newDirCertificates(dir string) (*dirCertificates, error) {
	files, err := dynamiccertificates.NewDynamicServingContentFromFiles("webhook",
		filepath.Join(dir, corev1.TLSCertKey), filepath.Join(dir, corev1.TLSPrivateKeyKey))
	if err != nil {
		return nil, fmt.Errorf("--webhook-cert-dir=%s: reading %s and %s: %w; mount a kubernetes.io/tls Secret there", dir, corev1.TLSCertKey, corev1.TLSPrivateKeyKey, err)
	}
	return &dirCertificates{files: files}, nil
}

// Run watches the files until ctx ends.
func (d *dirCertificates) Run(ctx context.Context) { d.files.Run(ctx, 1) }

// GetCertificate is a tls.Config.GetCertificate: the pair last read, parsed once per change.
func (d *dirCertificates) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	certPEM, keyPEM := d.files.CurrentCertKeyContent()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cert != nil && bytes.Equal(certPEM, d.certPEM) && bytes.Equal(keyPEM, d.keyPEM) {
		return d.cert, nil
	}
	// The watcher checked the pair when it read it; this cannot fail but for a bug.
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("the webhook's certificate and key do not make a pair: %w", err)
	}
	d.certPEM, d.keyPEM, d.cert = certPEM, keyPEM, &cert
	return d.cert, nil
}
