package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// dryRunOptions are what the dry run reads and writes; the Makefile sets every one.
type dryRunOptions struct {
	version   string // the release tag, v + semver
	out       string // bin/release
	imageDir  string // make image's --out, holding oci/
	chartDir  string // charts/tailor
	binary    string // the binary's name in the image
	sbom      string // the CycloneDX SBOM make sbom wrote
	cosignCmd string // the pinned cosign command line
	helmCmd   string // the pinned helm command line; empty skips helm push
}

// dryRunPassword protects the throwaway key the dry run makes. It guards nothing: the key signs
// only artifacts that never leave bin/release. Releases are signed keyless in CI.
const dryRunPassword = "tailor-dry-run"

// signer is cosign with the dry run's key: offline, no transparency log, no signing config
// fetched from Sigstore's TUF repository (the machine may reach only the module proxy).
type signer struct {
	cosign  tool
	key     string
	pub     string
	offline []string // the flags every signing command takes
}

func dryRun(ctx context.Context, o dryRunOptions, log io.Writer) error {
	start := time.Now()
	if err := checkVersion(o.version); err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	chart, err := packageChart(o.chartDir, o.version, o.out)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "chart packaged: %s (version %s, appVersion %s)\n", chart, strings.TrimPrefix(o.version, "v"), o.version)
	// The SBOM is checked against the image before anything is signed: a signature over an SBOM
	// that does not describe the binary would vouch for a wrong list.
	lines, err := verifySBOM(o.sbom, filepath.Join(o.imageDir, "oci"), o.binary)
	if err != nil {
		return err
	}
	s, err := newSigner(ctx, o, log)
	if err != nil {
		return err
	}
	reg, err := startRegistry()
	if err != nil {
		return err
	}
	defer reg.Close()
	imageLines, err := s.image(ctx, o, reg.Host)
	if err != nil {
		return err
	}
	blobLines, err := s.blobs(ctx, chart, o.sbom)
	if err != nil {
		return err
	}
	chartLines, err := pushChart(ctx, o, s, chart, reg.Host, log)
	if err != nil {
		return err
	}
	fmt.Fprintln(log, "\nrelease dry run "+o.version+": passed in "+time.Since(start).Round(time.Second).String())
	for _, l := range append(append(append(lines, imageLines...), blobLines...), chartLines...) {
		fmt.Fprintln(log, "  "+l)
	}
	return nil
}

// newSigner makes a fresh key pair in OUT/cosign.{key,pub}: generate-key-pair refuses to
// overwrite without asking, and a key from an earlier run proves nothing about this one.
func newSigner(ctx context.Context, o dryRunOptions, log io.Writer) (*signer, error) {
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
		cosign: cosign, key: prefix + ".key", pub: prefix + ".pub",
		offline: []string{"--key", prefix + ".key", "--tlog-upload=false", "--use-signing-config=false", "--yes"},
	}, nil
}

// image pushes the image to the loopback registry, signs its index by digest, verifies the
// signature with the public key, and keeps the signature's bundle in OUT.
func (s *signer) image(ctx context.Context, o dryRunOptions, host string) ([]string, error) {
	ref, err := pushLayout(filepath.Join(o.imageDir, "oci"), host+"/"+o.binary, o.version)
	if err != nil {
		return nil, err
	}
	if err := s.signRef(ctx, ref.String()); err != nil {
		return nil, err
	}
	bundle := filepath.Join(o.out, o.binary+".image.sigstore.json")
	if err := saveSignature(ref, bundle); err != nil {
		return nil, err
	}
	return []string{
		"image signed and verified: " + ref.String() + " against " + s.pub,
		"image signature bundle: " + bundle,
	}, nil
}

// signRef signs an artifact in the loopback registry by digest and verifies the signature.
func (s *signer) signRef(ctx context.Context, ref string) error {
	insecure := []string{"--allow-http-registry", "--allow-insecure-registry"}
	if err := s.cosign.run(ctx, append(append(append([]string{"sign"}, s.offline...), insecure...), ref)...); err != nil {
		return err
	}
	return s.cosign.run(ctx, append(append([]string{"verify", "--key", s.pub, "--insecure-ignore-tlog=true"}, insecure...), ref)...)
}

// blobs signs each file into FILE.sigstore.json, verifies each against the public key, and
// checks that verification can fail: a copy of the last file with one byte more must not verify.
func (s *signer) blobs(ctx context.Context, files ...string) ([]string, error) {
	var lines []string
	for _, f := range files {
		bundle := f + ".sigstore.json"
		if err := s.cosign.run(ctx, append(append([]string{"sign-blob"}, s.offline...), "--bundle", bundle, f)...); err != nil {
			return nil, err
		}
		if err := s.verifyBlob(ctx, f, bundle); err != nil {
			return nil, err
		}
		lines = append(lines, "signed and verified: "+f+" with "+bundle)
	}
	last := files[len(files)-1]
	tampered := last + ".tampered"
	if err := tamper(last, tampered); err != nil {
		return nil, err
	}
	defer os.Remove(tampered)
	if err := s.verifyBlob(ctx, tampered, last+".sigstore.json"); err == nil {
		return nil, fmt.Errorf("cosign verify-blob accepted %s, a changed copy of %s: verification proves nothing", tampered, last)
	}
	return append(lines, "refused as it must: "+last+" with one byte more against its bundle"), nil
}

func (s *signer) verifyBlob(ctx context.Context, file, bundle string) error {
	return s.cosign.run(ctx, "verify-blob", "--key", s.pub, "--insecure-ignore-tlog=true", "--bundle", bundle, file)
}

func tamper(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, append(b, '\n'), 0o644)
}

// saveSignature writes the signature cosign attached to ref in the registry (an OCI 1.1
// referrer whose one layer is a Sigstore bundle) to a file, since the registry goes away.
func saveSignature(ref name.Digest, path string) error {
	idx, err := remote.Referrers(ref)
	if err != nil {
		return fmt.Errorf("listing the signatures of %s: %w", ref, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, d := range im.Manifests {
		if !strings.Contains(d.ArtifactType, "sigstore.bundle") {
			continue
		}
		img, err := remote.Image(ref.Context().Digest(d.Digest.String()))
		if err != nil {
			return err
		}
		return writeFirstLayer(img, path)
	}
	return fmt.Errorf("%s has no Sigstore bundle among its %d referrers", ref, len(im.Manifests))
}

// helmDigestRE reads the digest `helm push` prints.
var helmDigestRE = regexp.MustCompile(`Digest: (sha256:[0-9a-f]{64})`)

// pushChart runs `helm push` as the release workflow does, into the loopback registry, and signs
// and verifies the pushed chart by digest, as the workflow does with the registry's.
func pushChart(ctx context.Context, o dryRunOptions, s *signer, chart, host string, log io.Writer) ([]string, error) {
	if o.helmCmd == "" {
		return []string{"helm push skipped: no --helm"}, nil
	}
	helm, err := newTool("helm", o.helmCmd, log)
	if err != nil {
		return nil, err
	}
	out, err := helm.output(ctx, "push", chart, "oci://"+host+"/charts", "--plain-http")
	if err != nil {
		return nil, err
	}
	m := helmDigestRE.FindSubmatch(out)
	if m == nil {
		return nil, fmt.Errorf("helm push printed no digest: %q", out)
	}
	ref := host + "/charts/tailor@" + string(m[1])
	if err := s.signRef(ctx, ref); err != nil {
		return nil, err
	}
	return []string{"chart pushed with helm push, signed and verified: " + ref}, nil
}
