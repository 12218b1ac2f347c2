package webhook

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	cryptorand "crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math"
	"math/big"
	"net"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// The keys of the Secret Tailor manages. tls.crt and tls.key are what a kubernetes.io/tls Secret
// holds; ca.crt is what cert-manager calls the CA bundle; ca.key lets any replica sign the next
// serving certificate with the same CA, so rotating it changes nothing the API server trusts.
const (
	keyCACert = "ca.crt"
	keyCAKey  = "ca.key"
)

// Lifetimes of what Tailor issues. The CA outlives many serving certificates, so rotating those
// leaves the caBundle alone; ten years is what certutil.NewSelfSignedCACert issues.
const (
	CALifetime      = 10 * 365 * 24 * time.Hour
	ServingLifetime = 365 * 24 * time.Hour
)

// backdate makes a new certificate valid a little before now: replicas' and the API server's
// clocks differ.
const backdate = time.Hour

// bundle is the Secret's content, read leniently: a field that is missing or does not parse is
// nil, and is issued again.
type bundle struct {
	// cas are the CA certificates the webhook configuration trusts: cas[0] signs, the others are
	// earlier CAs kept until they expire, so a serving certificate they signed stays trusted while
	// replicas move to one the new CA signs.
	cas    []*x509.Certificate
	caKey  crypto.Signer
	cert   *x509.Certificate
	key    crypto.Signer
	caPEM  []byte
	tlsPEM []byte
}

func readBundle(data map[string][]byte) bundle {
	var b bundle
	if cas, err := certutil.ParseCertsPEM(data[keyCACert]); err == nil {
		b.cas, b.caPEM = cas, data[keyCACert]
	}
	b.caKey = parseKey(data[keyCAKey])
	if certs, err := certutil.ParseCertsPEM(data[corev1.TLSCertKey]); err == nil {
		b.cert, b.tlsPEM = certs[0], data[corev1.TLSCertKey]
	}
	b.key = parseKey(data[corev1.TLSPrivateKeyKey])
	return b
}

func parseKey(data []byte) crypto.Signer {
	key, err := keyutil.ParsePrivateKeyPEM(data)
	if err != nil {
		return nil
	}
	signer, _ := key.(crypto.Signer)
	return signer
}

// data is the Secret's content for b.
func (b bundle) data() (map[string][]byte, error) {
	caKey, err := keyutil.MarshalPrivateKeyToPEM(b.caKey)
	if err != nil {
		return nil, err
	}
	key, err := keyutil.MarshalPrivateKeyToPEM(b.key)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{keyCACert: b.caPEM, keyCAKey: caKey, corev1.TLSCertKey: b.tlsPEM, corev1.TLSPrivateKeyKey: key}, nil
}

// renewAt is when a certificate is due for rotation: at two thirds of its lifetime, well before it
// expires, so a replica that was down or a failing API server has a third of it to catch up.
func renewAt(c *x509.Certificate) time.Time {
	return c.NotBefore.Add(c.NotAfter.Sub(c.NotBefore) * 2 / 3)
}

// renewCA returns b with a new CA when it has none it can sign with, or its CA is due, and without
// earlier CAs that have expired. why is "" when nothing changes. The serving certificate is left
// alone: until the webhook configuration trusts the new CA, only the old one's may be served.
func renewCA(now time.Time, b bundle) (next bundle, why string, err error) {
	kept := slices.DeleteFunc(slices.Clone(b.cas), func(c *x509.Certificate) bool { return !now.Before(c.NotAfter) })
	switch {
	case len(b.cas) == 0:
		why = "there is no CA"
	case b.caKey == nil || !sameKey(b.cas[0], b.caKey):
		why = "the CA's key is missing or is not the CA's"
	case !now.Before(renewAt(b.cas[0])):
		why = fmt.Sprintf("the CA is past two thirds of its lifetime (renew at %s)", renewAt(b.cas[0]).Format(time.RFC3339))
	case len(kept) != len(b.cas):
		b.cas, b.caPEM = kept, encode(kept)
		return b, "an earlier CA has expired", nil
	default:
		return b, "", nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), cryptorand.Reader)
	if err != nil {
		return b, "", err
	}
	// certutil.NewSelfSignedCACert would date it by the wall clock, not now.
	ca, err := sign(&x509.Certificate{
		Subject:               pkix.Name{CommonName: fmt.Sprintf("tailor-webhook-ca@%d", now.Unix())},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(CALifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil, key, key)
	if err != nil {
		return b, "", err
	}
	b.cas = append([]*x509.Certificate{ca}, kept...)
	b.caKey, b.caPEM = key, encode(b.cas)
	return b, why, nil
}

// renewServing returns b with a serving certificate for hosts signed by b's current CA, when the
// one it has is missing, not signed by that CA, for other names, or due. why is "" when nothing
// changes.
func renewServing(now time.Time, b bundle, hosts []string) (next bundle, why string, err error) {
	if len(b.cas) == 0 || b.caKey == nil {
		return b, "", fmt.Errorf("no CA to sign a serving certificate with")
	}
	switch {
	case b.cert == nil || b.key == nil:
		why = "there is no serving certificate"
	case !sameKey(b.cert, b.key):
		why = "the serving key is not the certificate's"
	case b.cert.CheckSignatureFrom(b.cas[0]) != nil:
		why = "the serving certificate is not signed by the current CA"
	case !sameNames(names(b.cert), hosts):
		why = fmt.Sprintf("the serving certificate is for %v, not %v", names(b.cert), hosts)
	case !now.Before(renewAt(b.cert)):
		why = fmt.Sprintf("the serving certificate is past two thirds of its lifetime (renew at %s)", renewAt(b.cert).Format(time.RFC3339))
	default:
		return b, "", nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), cryptorand.Reader)
	if err != nil {
		return b, "", err
	}
	cert, err := sign(servingTemplate(now, b.cas[0], hosts), b.cas[0], key, b.caKey)
	if err != nil {
		return b, "", err
	}
	b.cert, b.key, b.tlsPEM = cert, key, encode([]*x509.Certificate{cert})
	return b, why, nil
}

// servable says whether b's serving certificate can be served at all: it is there and has not
// expired (whoever signed it).
func (b bundle) servable(now time.Time) bool {
	return b.cert != nil && b.key != nil && sameKey(b.cert, b.key) && now.Before(b.cert.NotAfter)
}

// nextRenewal is when renewCA or renewServing will next have something to do.
func (b bundle) nextRenewal() time.Time {
	var next time.Time
	if b.cert != nil {
		next = renewAt(b.cert)
	}
	for i, ca := range b.cas {
		at := ca.NotAfter
		if i == 0 {
			at = renewAt(ca)
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}

func servingTemplate(now time.Time, ca *x509.Certificate, hosts []string) *x509.Certificate {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: hosts[0]},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(ServingLifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	// A serving certificate outliving its CA would be refused before it is due.
	if tmpl.NotAfter.After(ca.NotAfter) {
		tmpl.NotAfter = ca.NotAfter
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return tmpl
}

// sign issues tmpl for key, signed by parent's signer (self-signed when parent is nil), with a
// random serial number in [1, MaxInt64).
func sign(tmpl, parent *x509.Certificate, key, signer crypto.Signer) (*x509.Certificate, error) {
	serial, err := cryptorand.Int(cryptorand.Reader, big.NewInt(math.MaxInt64-1))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial.Add(serial, big.NewInt(1))
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(cryptorand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		return nil, err
	}
	return x509.ParseCertificate(der)
}

// names are the certificate's subject alternative names.
func names(c *x509.Certificate) []string {
	out := slices.Clone(c.DNSNames)
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	return out
}

func sameNames(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func sameKey(c *x509.Certificate, key crypto.Signer) bool {
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(c.PublicKey)
}

func encode(certs []*x509.Certificate) []byte {
	out, _ := certutil.EncodeCertificates(certs...)
	return out
}

// trustedBy says whether a webhook's caBundle is exactly the bundle's CAs.
func (b bundle) trustedBy(caBundle []byte) bool { return bytes.Equal(caBundle, b.caPEM) }
