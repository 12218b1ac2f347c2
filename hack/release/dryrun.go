package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// dryRunPassword protects the throwaway key the dry run makes. It guards nothing: the key signs
// only what stays in bin/release and in a registry that lives as long as the dry run. Releases
// are signed keyless in CI.
const dryRunPassword = "tailor-dry-run"

// dryRun runs the release's steps into a loopback registry with a fresh local key, and prints
// what each proved.
func dryRun(ctx context.Context, o options, log io.Writer) error {
	start := time.Now()
	if err := checkVersion(o.version); err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	s, err := newKeySigner(ctx, o, log)
	if err != nil {
		return err
	}
	reg, err := startRegistry()
	if err != nil {
		return err
	}
	defer reg.Close()
	lines, err := publish(ctx, o, s, reg.Host, true, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "\nrelease dry run %s passed in %s (registry %s, gone now; key %s):\n",
		o.version, time.Since(start).Round(time.Second), reg.Host, filepath.Join(o.out, "cosign.pub"))
	for _, l := range lines {
		fmt.Fprintln(log, "  "+l)
	}
	return nil
}

// newKeySigner makes a fresh key pair in OUT/cosign.{key,pub} (generate-key-pair would ask
// before overwriting one, and a key from an earlier run proves nothing about this one) and
// signs offline with it: no transparency log, no signing configuration fetched from Sigstore,
// since the machine may reach only the module proxy.
func newKeySigner(ctx context.Context, o options, log io.Writer) (*signer, error) {
	cosign, err := newTool("cosign", o.cosignCmd, log, "COSIGN_PASSWORD="+dryRunPassword)
	if err != nil {
		return nil, err
	}
	prefix := filepath.Join(o.out, "cosign")
	for _, f := range []string{prefix + ".key", prefix + ".pub"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if err := cosign.run(ctx, "generate-key-pair", "--output-key-prefix", prefix); err != nil {
		return nil, err
	}
	return &signer{
		cosign:   cosign,
		sign:     []string{"--key", prefix + ".key", "--tlog-upload=false", "--use-signing-config=false", "--yes"},
		verify:   []string{"--key", prefix + ".pub", "--insecure-ignore-tlog=true"},
		registry: []string{"--allow-http-registry", "--allow-insecure-registry"},
	}, nil
}

// newKeylessSigner signs as the release workflow: a short-lived certificate for the workflow's
// OIDC identity from Sigstore's public instance, logged in its transparency log; verification
// requires that identity, so a signature by anyone else fails.
func newKeylessSigner(o options, log io.Writer) (*signer, error) {
	if o.identity == "" || o.issuer == "" {
		return nil, errors.New("--identity and --issuer are required: the workflow's identity and its OIDC issuer")
	}
	cosign, err := newTool("cosign", o.cosignCmd, log)
	if err != nil {
		return nil, err
	}
	return &signer{
		cosign: cosign,
		sign:   []string{"--yes"},
		verify: []string{"--certificate-identity", o.identity, "--certificate-oidc-issuer", o.issuer},
	}, nil
}

// release publishes for real, from the release workflow.
func release(ctx context.Context, o options, log io.Writer) error {
	if err := checkVersion(o.version); err != nil {
		return err
	}
	if o.registry == "" {
		return errors.New("--registry is empty: pass the registry and path the release goes to, e.g. $REGISTRY")
	}
	s, err := newKeylessSigner(o, log)
	if err != nil {
		return err
	}
	lines, err := publish(ctx, o, s, o.registry, false, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "\nrelease %s published to %s:\n", o.version, o.registry)
	for _, l := range lines {
		fmt.Fprintln(log, "  "+l)
	}
	return nil
}
