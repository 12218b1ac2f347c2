package webhook

import (
	"bytes"
	"crypto/x509"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

var testHosts = []string{"tailor-webhook.kube-system.svc", "127.0.0.1"}

// issue runs the two steps the Secret controller runs on an empty Secret, and round-trips the
// result through the Secret's data.
func issue(t *testing.T, now time.Time, b bundle) bundle {
	t.Helper()
	b, why, err := renewCA(now, b)
	if err != nil || why == "" {
		t.Fatalf("renewCA: why %q, err %v; want a new CA", why, err)
	}
	b, why, err = renewServing(now, b, testHosts)
	if err != nil || why == "" {
		t.Fatalf("renewServing: why %q, err %v; want a new certificate", why, err)
	}
	return roundTrip(t, b)
}

func roundTrip(t *testing.T, b bundle) bundle {
	t.Helper()
	data, err := b.data()
	if err != nil {
		t.Fatal(err)
	}
	return readBundle(data)
}

// verifies says whether a client that trusts caBundle accepts cert for host, as the API server does.
func verifies(caBundle []byte, cert *x509.Certificate, host string, at time.Time) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caBundle)
	_, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: host, CurrentTime: at})
	return err
}

func mustNotRenew(t *testing.T, now time.Time, b bundle) {
	t.Helper()
	if _, why, err := renewCA(now, b); why != "" || err != nil {
		t.Fatalf("renewCA at %s: %q, %v; want nothing to do", now, why, err)
	}
	if _, why, err := renewServing(now, b, testHosts); why != "" || err != nil {
		t.Fatalf("renewServing at %s: %q, %v; want nothing to do", now, why, err)
	}
}

// A missing Secret gets a CA and a serving certificate for the Service's name and the extra
// hosts, which a client trusting ca.crt accepts; read back from the Secret, nothing is due.
func TestIssueFromNothing(t *testing.T) {
	now := time.Now()
	b := issue(t, now, readBundle(nil))
	for _, host := range testHosts {
		if err := verifies(b.caPEM, b.cert, host, now); err != nil {
			t.Errorf("the serving certificate does not verify for %s: %v", host, err)
		}
	}
	if err := verifies(b.caPEM, b.cert, "elsewhere.kube-system.svc", now); err == nil {
		t.Error("the serving certificate verifies for a name it was not issued for")
	}
	// Certificates hold whole seconds.
	if got := now.Add(ServingLifetime).Sub(b.cert.NotAfter); got < 0 || got >= time.Second {
		t.Errorf("serving certificate valid until %s; want %s from now", b.cert.NotAfter, ServingLifetime)
	}
	mustNotRenew(t, now, b)
	if want := renewAt(b.cert); !b.nextRenewal().Equal(want) {
		t.Errorf("next renewal %s; want the serving certificate's, %s", b.nextRenewal(), want)
	}
}

// At two thirds of its lifetime the serving certificate is issued again by the same CA: the
// caBundle stays as it is.
func TestServingCertificateRotatesAtTwoThirds(t *testing.T) {
	now := time.Now()
	b := issue(t, now, bundle{})
	due := renewAt(b.cert)
	mustNotRenew(t, due.Add(-time.Minute), b)
	if _, why, _ := renewCA(due, b); why != "" {
		t.Fatalf("renewCA when the serving certificate is due: %q; want nothing to do", why)
	}
	next, why, err := renewServing(due, b, testHosts)
	if err != nil || !strings.Contains(why, "two thirds") {
		t.Fatalf("renewServing when due: %q, %v; want a renewal at two thirds", why, err)
	}
	next = roundTrip(t, next)
	if next.cert.Equal(b.cert) || !bytes.Equal(next.caPEM, b.caPEM) {
		t.Fatal("want a new serving certificate and the same CA bundle")
	}
	if err := verifies(b.caPEM, next.cert, testHosts[0], due); err != nil {
		t.Fatalf("the new certificate does not verify against the caBundle already in place: %v", err)
	}
	mustNotRenew(t, due, next)
}

// When the CA is due, a new one is added in front of it and the serving certificate is kept, so
// what replicas serve stays trusted while the caBundle is updated; the next step issues a serving
// certificate from the new CA; once the old CA expires it leaves the bundle.
func TestCARotatesWithOverlap(t *testing.T) {
	now := time.Now()
	b := issue(t, now, bundle{})
	old := b.cas[0]
	// The serving certificate would be due long before the CA; keep it fresh for this test.
	due := renewAt(old)
	b.cert = nil
	if b, _, _ = renewServing(due.Add(-time.Hour), b, testHosts); b.cert == nil {
		t.Fatal("no serving certificate")
	}

	rotated, why, err := renewCA(due, b)
	if err != nil || !strings.Contains(why, "CA is past two thirds") {
		t.Fatalf("renewCA when the CA is due: %q, %v", why, err)
	}
	rotated = roundTrip(t, rotated)
	if len(rotated.cas) != 2 || rotated.cas[0].Equal(old) || !rotated.cas[1].Equal(old) {
		t.Fatalf("CAs after rotation %d; want the new one, then the old one", len(rotated.cas))
	}
	if !rotated.cert.Equal(b.cert) {
		t.Fatal("the CA step replaced the serving certificate before the caBundle could trust its issuer")
	}
	if err := verifies(rotated.caPEM, rotated.cert, testHosts[0], due); err != nil {
		t.Fatalf("the certificate being served does not verify against the new caBundle: %v", err)
	}

	reissued, why, err := renewServing(due, rotated, testHosts)
	if err != nil || !strings.Contains(why, "not signed by the current CA") {
		t.Fatalf("renewServing after the CA step: %q, %v", why, err)
	}
	if err := reissued.cert.CheckSignatureFrom(rotated.cas[0]); err != nil {
		t.Fatalf("the new serving certificate is not the new CA's: %v", err)
	}
	mustNotRenew(t, due, reissued)

	expired, why, err := renewCA(old.NotAfter, reissued)
	if err != nil || why != "an earlier CA has expired" || len(expired.cas) != 1 || !expired.cas[0].Equal(rotated.cas[0]) {
		t.Fatalf("renewCA once the old CA expired: %q, %v, %d CAs; want the old one dropped", why, err, len(expired.cas))
	}
}

// Whatever is wrong with the Secret's content is issued again.
func TestBrokenContentIsReissued(t *testing.T) {
	now := time.Now()
	good := issue(t, now, bundle{})
	data, _ := good.data()
	other := issue(t, now, bundle{})
	otherData, _ := other.data()
	for _, tc := range []struct {
		name     string
		mutate   func(map[string][]byte)
		hosts    []string
		wantCA   string
		wantCert string
	}{
		{name: "garbage CA", mutate: func(d map[string][]byte) { d[keyCACert] = []byte("not PEM") }, wantCA: "there is no CA"},
		{name: "CA key of another CA", mutate: func(d map[string][]byte) { d[keyCAKey] = otherData[keyCAKey] }, wantCA: "not the CA's"},
		{name: "no serving key", mutate: func(d map[string][]byte) { delete(d, corev1.TLSPrivateKeyKey) }, wantCert: "no serving certificate"},
		{name: "serving key of another certificate", mutate: func(d map[string][]byte) { d[corev1.TLSPrivateKeyKey] = otherData[corev1.TLSPrivateKeyKey] }, wantCert: "not the certificate's"},
		{name: "serving certificate of another CA", mutate: func(d map[string][]byte) {
			d[corev1.TLSCertKey], d[corev1.TLSPrivateKeyKey] = otherData[corev1.TLSCertKey], otherData[corev1.TLSPrivateKeyKey]
		}, wantCert: "not signed by the current CA"},
		{name: "another Service", hosts: []string{"tailor.other.svc"}, wantCert: "is for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := map[string][]byte{}
			for k, v := range data {
				d[k] = v
			}
			if tc.mutate != nil {
				tc.mutate(d)
			}
			hosts := testHosts
			if tc.hosts != nil {
				hosts = tc.hosts
			}
			b := readBundle(d)
			next, why, err := renewCA(now, b)
			if err != nil || !strings.Contains(why, tc.wantCA) || (tc.wantCA == "") != (why == "") {
				t.Fatalf("renewCA: %q, %v; want %q", why, err, tc.wantCA)
			}
			if tc.wantCA != "" {
				return
			}
			next, why, err = renewServing(now, next, hosts)
			if err != nil || !strings.Contains(why, tc.wantCert) || why == "" {
				t.Fatalf("renewServing: %q, %v; want %q", why, err, tc.wantCert)
			}
			if err := verifies(next.caPEM, next.cert, hosts[0], now); err != nil {
				t.Fatalf("the reissued certificate does not verify: %v", err)
			}
		})
	}
}
