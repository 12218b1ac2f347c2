package webhook

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Defaults a Helm chart or a plain manifest can rely on.
const (
	DefaultPort          = 9443
	DefaultService       = "tailor-webhook"
	DefaultConfiguration = "tailor"
	// DefaultNamespace is used when POD_NAMESPACE is not set: where manifests/deploy installs Tailor.
	DefaultNamespace = "kube-system"
)

// Options configure the webhook. The flag-less fields are for the sandbox, which calls the
// webhook by IP on loopback.
type Options struct {
	// Port is the HTTPS port; 0 disables the webhook.
	Port int
	// BindAddress is the address to listen on; "" listens on every interface.
	BindAddress string
	// CertDir holds tls.crt and tls.key, kept current by someone else (cert-manager).
	CertDir string
	// CertSecret names the Secret, in Namespace, where Tailor keeps a CA and a serving
	// certificate of its own for Service.Namespace.svc.
	CertSecret string
	Service    string
	Namespace  string
	// Configuration names the MutatingWebhookConfiguration whose webhooks' caBundle Tailor keeps
	// equal to the CA of CertSecret.
	Configuration string
	// ExtraHosts are more names or IPs the serving certificate of CertSecret is valid for.
	ExtraHosts []string
}

// NewOptions returns the defaults: the webhook on, on port 9443, with no certificate chosen yet.
func NewOptions() *Options {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = DefaultNamespace
	}
	return &Options{Port: DefaultPort, Service: DefaultService, Namespace: ns, Configuration: DefaultConfiguration}
}

// AddFlags adds the webhook's flags to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.Port, "webhook-port", o.Port, "HTTPS port of the mutating webhook that sets schedulerName on pods of opted-in namespaces (path "+Path+"); 0 disables it. Served by every replica, leader or not")
	fs.StringVar(&o.CertDir, "webhook-cert-dir", o.CertDir, "serve the webhook with tls.crt and tls.key from this folder (e.g. cert-manager's Secret mounted), reloaded when they change; exclusive with --webhook-cert-secret")
	fs.StringVar(&o.CertSecret, "webhook-cert-secret", o.CertSecret, "keep a self-signed CA and serving certificate in this Secret of --webhook-namespace (created when missing, rotated at two thirds of their lifetime), serve with it, and put its CA in the caBundle of --webhook-configuration; exclusive with --webhook-cert-dir")
	fs.StringVar(&o.Service, "webhook-service", o.Service, "with --webhook-cert-secret: the Service in front of the webhook; the certificate is for SERVICE.NAMESPACE.svc")
	fs.StringVar(&o.Namespace, "webhook-namespace", o.Namespace, "with --webhook-cert-secret: the namespace of the Secret and the Service; the default is $POD_NAMESPACE, or "+DefaultNamespace+" without it")
	fs.StringVar(&o.Configuration, "webhook-configuration", o.Configuration, "with --webhook-cert-secret: the MutatingWebhookConfiguration whose webhooks get the CA as caBundle")
}

// Enabled says whether the webhook is served at all.
func (o *Options) Enabled() bool { return o != nil && o.Port != 0 }

// Validate says what is wrong with the flags, naming each one.
func (o *Options) Validate() error {
	if !o.Enabled() {
		return nil
	}
	var errs []error
	if o.Port < 0 || o.Port > 65535 {
		errs = append(errs, fmt.Errorf("--webhook-port=%d: a port is 1-65535, or 0 to disable the webhook", o.Port))
	}
	switch {
	case o.CertDir == "" && o.CertSecret == "":
		errs = append(errs, fmt.Errorf("--webhook-port=%d serves the webhook over TLS and needs a certificate: give --webhook-cert-dir (a folder with tls.crt and tls.key, e.g. a cert-manager Certificate's Secret mounted) or --webhook-cert-secret (a Secret Tailor creates and rotates), or --webhook-port=0 to disable the webhook", o.Port))
	case o.CertDir != "" && o.CertSecret != "":
		errs = append(errs, fmt.Errorf("--webhook-cert-dir=%s and --webhook-cert-secret=%s: give one of them, not both", o.CertDir, o.CertSecret))
	case o.CertSecret != "":
		for _, f := range []struct {
			flag, value string
			check       func(string) []string
		}{
			{"webhook-cert-secret", o.CertSecret, validation.IsDNS1123Subdomain},
			{"webhook-service", o.Service, validation.IsDNS1123Label},
			{"webhook-namespace", o.Namespace, validation.IsDNS1123Label},
			{"webhook-configuration", o.Configuration, validation.IsDNS1123Subdomain},
		} {
			if msgs := f.check(f.value); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("--%s=%q: with --webhook-cert-secret, this must be an object name: %s", f.flag, f.value, strings.Join(msgs, "; ")))
			}
		}
	}
	// One mistake a line.
	return errors.Join(errs...)
}

// hosts are the names the certificate of CertSecret is for: the Service's, which the API server
// dials for a webhook with a service reference, then ExtraHosts.
func (o *Options) hosts() []string {
	return append([]string{fmt.Sprintf("%s.%s.svc", o.Service, o.Namespace)}, o.ExtraHosts...)
}
