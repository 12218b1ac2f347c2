package webhook

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Each mistake in the webhook's flags is refused with a message naming the flag.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string // substrings of the error; none means valid
	}{
		{name: "disabled", args: []string{"--webhook-port=0"}},
		{name: "cert dir", args: []string{"--webhook-cert-dir=/certs"}},
		{name: "cert secret", args: []string{"--webhook-cert-secret=tailor-webhook-cert"}},
		{name: "no certificate", want: []string{"--webhook-port=9443", "--webhook-cert-dir", "--webhook-cert-secret", "--webhook-port=0"}},
		{name: "both", args: []string{"--webhook-cert-dir=/certs", "--webhook-cert-secret=s"}, want: []string{"not both"}},
		{name: "bad port", args: []string{"--webhook-port=70000", "--webhook-cert-dir=/certs"}, want: []string{"--webhook-port=70000"}},
		{name: "bad names", args: []string{"--webhook-cert-secret=S", "--webhook-service=a.b", "--webhook-namespace=", "--webhook-configuration=_"},
			want: []string{`--webhook-cert-secret="S"`, `--webhook-service="a.b"`, `--webhook-namespace=""`, `--webhook-configuration="_"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error naming %v", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// The defaults the Helm chart relies on.
func TestDefaults(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "tailor-system")
	o := NewOptions()
	if o.Port != 9443 || o.Service != "tailor-webhook" || o.Namespace != "tailor-system" || o.Configuration != "tailor" || o.CertDir != "" || o.CertSecret != "" {
		t.Fatalf("defaults %+v", o)
	}
	t.Setenv("POD_NAMESPACE", "")
	if o := NewOptions(); o.Namespace != "kube-system" {
		t.Fatalf("namespace without POD_NAMESPACE %q; want kube-system", o.Namespace)
	}
}
