package install

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/pkg/webhook"
)

// Replicas started together against a missing Secret race to create it through the API server;
// they end up serving the one certificate that won, and the caBundle of every webhook of the
// configuration is its CA, again after someone (a Helm upgrade) empties it.
func TestWebhookReplicasAgreeOnOneCertificate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane; skipped in -short mode")
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	defer cancel()
	cp, err := sandbox.StartControlPlane(t, filepath.Join(t.TempDir(), "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	kube, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	mwcs := kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if _, err := mwcs.Create(ctx, podWebhookConfiguration(t, "tailor", "https://127.0.0.1:1/mutate-pods", "a.tailor.sh", "b.tailor.sh"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	opts := webhook.Options{BindAddress: "127.0.0.1", CertSecret: "tailor-webhook-cert", Service: "tailor-webhook", Namespace: "default",
		Configuration: "tailor", ExtraHosts: []string{"127.0.0.1"}}
	var addrs []string
	done := make(chan error, 2)
	for range 2 {
		o := opts
		if o.Port, err = freeLoopbackPort(); err != nil {
			t.Fatal(err)
		}
		srv, err := webhook.NewServer(o, "tailor", kube, clock.RealClock{})
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, srv.Addr().String())
		go func() { done <- srv.Run(ctx) }()
	}
	defer func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Errorf("webhook server: %v", err)
			}
		}
	}()

	poll := func(what string, cond func() (bool, string)) {
		t.Helper()
		last := ""
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			ok, why := cond()
			last = why
			return ok, nil
		}); err != nil {
			t.Fatalf("waiting for %s: %v; last: %s", what, err, last)
		}
	}
	poll("both replicas to serve the Secret's certificate", func() (bool, string) {
		secret, err := kube.CoreV1().Secrets("default").Get(ctx, "tailor-webhook-cert", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, addr := range addrs {
			if why := servesCertificate(addr, secret.Data["ca.crt"], secret.Data["tls.crt"]); why != "" {
				return false, addr + ": " + why
			}
		}
		return true, ""
	})
	poll("the caBundle of both webhooks", func() (bool, string) {
		return caBundleIsSecrets(ctx, kube, "tailor", "default", "tailor-webhook-cert")
	})

	cfg, err := mwcs.Get(ctx, "tailor", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Webhooks[1].ClientConfig.CABundle = nil
	if _, err := mwcs.Update(ctx, cfg, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll("the emptied caBundle to be put back", func() (bool, string) {
		return caBundleIsSecrets(ctx, kube, "tailor", "default", "tailor-webhook-cert")
	})
}

// servesCertificate says what is wrong, if anything, with the certificate served at addr: it must
// verify against caBundle for 127.0.0.1 and be the one in tlsCrt.
func servesCertificate(addr string, caBundle, tlsCrt []byte) string {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caBundle) {
		return "no CA in the Secret"
	}
	want, err := certutil.ParseCertsPEM(tlsCrt)
	if err != nil {
		return "the Secret's tls.crt: " + err.Error()
	}
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
	if err != nil {
		return err.Error()
	}
	defer func() { _ = conn.Close() }()
	if got := conn.ConnectionState().PeerCertificates[0]; !got.Equal(want[0]) {
		return fmt.Sprintf("serves serial %s, the Secret holds %s", got.SerialNumber, want[0].SerialNumber)
	}
	return ""
}

func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }() // only the number was wanted
	return l.Addr().(*net.TCPAddr).Port, nil
}
