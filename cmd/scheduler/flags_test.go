package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Every flag that real AWS needs, and every webhook mistake, stops the start with a message that
// names the flag; the fake cloud and an emulator need neither cluster flag.
func TestValidateFlags(t *testing.T) {
	const certs = "--webhook-cert-secret=tailor-webhook-cert"
	for _, tc := range []struct {
		name string
		args []string
		want []string // substrings of the error; none means valid
	}{
		{name: "production", args: []string{"--cluster-name=prod", "--cluster-endpoint=https://eks.example", certs}},
		{name: "aws by default needs the cluster", args: []string{certs}, want: []string{"--cluster-name is required", "--cluster-endpoint is required"}},
		{name: "aws without the endpoint", args: []string{"--cluster-name=prod", certs}, want: []string{"--cluster-endpoint is required"}},
		{name: "aws without the name", args: []string{"--cluster-endpoint=https://eks.example", certs}, want: []string{"--cluster-name is required"}},
		{name: "an emulator", args: []string{"--aws-endpoint=http://127.0.0.1:4566", certs}},
		{name: "fake", args: []string{"--cloud=fake", "--webhook-port=0"}},
		{name: "unknown cloud", args: []string{"--cloud=gcp", "--webhook-port=0"}, want: []string{`--cloud="gcp"`}},
		{name: "webhook without a certificate", args: []string{"--cloud=fake"}, want: []string{"--webhook-cert-dir", "--webhook-cert-secret", "--webhook-port=0"}},
		{name: "a region", args: []string{"--cluster-name=prod", "--cluster-endpoint=https://eks.example", "--aws-region=eu-west-1", certs}},
		{name: "a zone given as the region", args: []string{"--cluster-name=prod", "--cluster-endpoint=https://eks.example", "--aws-region=eu-west-1a", certs},
			want: []string{`--aws-region: region "eu-west-1a" is not an AWS region name`}},
		{name: "all at once", args: []string{"--webhook-cert-dir=/certs", certs}, want: []string{"--cluster-name", "--cluster-endpoint", "not both"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTailorFlags()
			fs := pflag.NewFlagSet("tailor", pflag.ContinueOnError)
			f.addFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := f.validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("want valid, got: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error saying %v", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// tailor-scheduler --help is kube-scheduler's, in its sections, with Tailor's flags in their own.
func TestHelpIsSectioned(t *testing.T) {
	cmd := newCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	for _, section := range []string{"Misc flags:", "Secure serving flags:", "Leader election flags:", "Logs flags:", "Tailor flags:"} {
		if !strings.Contains(help, section) {
			t.Errorf("no %q section in --help:\n%s", section, help)
		}
	}
	tailor := help[strings.Index(help, "Tailor flags:"):]
	for _, flag := range []string{"--cloud string", `(default "aws")`, "--cluster-name", "--cluster-endpoint", "--webhook-port int", "(default 9443)",
		"--webhook-cert-dir", "--webhook-cert-secret", "--webhook-service", "--webhook-namespace", "--webhook-configuration"} {
		if !strings.Contains(tailor, flag) {
			t.Errorf("the Tailor section does not show %q:\n%s", flag, tailor)
		}
	}
	if regexp.MustCompile(`(?s)Tailor flags:.*--config string`).MatchString(help) {
		t.Error("kube-scheduler's --config is listed under Tailor flags")
	}
}
