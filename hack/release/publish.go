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

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// options are what a release reads and writes; the Makefile sets every one.
type options struct {
	version      string // the release tag, v + semver
	out          string // bin/release
	imageDir     string // make image's --out, holding oci/
	chartDir     string // charts/tailor
	binary       string // the binary's name in the image, and the image's repository name
	sbom         string // the CycloneDX SBOM make sbom wrote
	mainPkg      string // the binary's main package (sbom)
	cyclonedxCmd string // the pinned cyclonedx-gomod command line (sbom)
	cosignCmd    string // the pinned cosign command line
	helmCmd      string // the pinned helm command line
	registry     string // publish: where the image and the chart go, e.g. HOST/ORG
	identity     string // publish: the workflow's identity that keyless signatures must carry
	issuer       string // publish: the OIDC issuer of that identity
}

// signer is cosign with either the dry run's key or, in the release workflow, keyless: the
// flags differ, the steps do not.
type signer struct {
	cosign   tool
	sign     []string // every signing command takes these
	verify   []string // every verifying command takes these
	registry []string // every command that reaches the registry takes these
}

// publish pushes and signs a release into registry, the same steps for the dry run (loopback
// registry, local key) and the release workflow (the project's registry, keyless), and returns
// one line per thing proven. The SBOM is checked against the image before anything is signed:
// a signature over an SBOM that does not describe the binary would vouch for a wrong list.
func publish(ctx context.Context, o options, s *signer, registry string, insecure bool, log io.Writer) ([]string, error) {
	chart, err := packageChart(o.chartDir, o.version, o.out)
	if err != nil {
		return nil, err
	}
	lines := []string{fmt.Sprintf("chart packaged: %s (version %s, appVersion %s)", chart, strings.TrimPrefix(o.version, "v"), o.version)}
	sbomLines, err := verifySBOM(o.sbom, filepath.Join(o.imageDir, "oci"), o.binary)
	if err != nil {
		return nil, err
	}
	lines = append(lines, sbomLines...)
	ref, err := pushLayout(filepath.Join(o.imageDir, "oci"), registry+"/"+o.binary, o.version, insecure)
	if err != nil {
		return nil, err
	}
	if err := s.signRef(ctx, ref.String()); err != nil {
		return nil, err
	}
	if err := s.attestSBOM(ctx, ref.String(), o.sbom); err != nil {
		return nil, err
	}
	lines = append(lines, "image pushed, signed and verified, SBOM attested and verified: "+ref.String())
	bundles, err := saveBundles(ref, filepath.Join(o.out, o.binary+"-image"))
	if err != nil {
		return nil, err
	}
	lines = append(lines, "image bundles saved: "+strings.Join(bundles, ", "))
	chartRef, err := pushChart(ctx, o, chart, registry, insecure, log)
	if err != nil {
		return nil, err
	}
	if err := s.signRef(ctx, chartRef); err != nil {
		return nil, err
	}
	lines = append(lines, "chart pushed with helm push, signed and verified: "+chartRef)
	blobLines, err := s.blobs(ctx, chart, o.sbom)
	return append(lines, blobLines...), err
}

// signRef signs an artifact in a registry by digest and verifies the signature.
func (s *signer) signRef(ctx context.Context, ref string) error {
	if err := s.cosign.run(ctx, join([]string{"sign"}, s.sign, s.registry, []string{ref})...); err != nil {
		return err
	}
	return s.cosign.run(ctx, join([]string{"verify"}, s.verify, s.registry, []string{ref})...)
}

// attestSBOM attaches the SBOM to the image as a signed CycloneDX attestation, and verifies it.
func (s *signer) attestSBOM(ctx context.Context, ref, sbom string) error {
	typ := []string{"--type", "cyclonedx"}
	if err := s.cosign.run(ctx, join([]string{"attest", "--predicate", sbom}, typ, s.sign, s.registry, []string{ref})...); err != nil {
		return err
	}
	return s.cosign.runQuiet(ctx, join([]string{"verify-attestation"}, typ, s.verify, s.registry, []string{ref})...)
}

// blobs signs each file into FILE.sigstore.json and verifies each. A signature is only worth
// its verification, so the last file is also changed by one byte and must then fail to verify.
func (s *signer) blobs(ctx context.Context, files ...string) ([]string, error) {
	var lines []string
	for _, f := range files {
		bundle := f + ".sigstore.json"
		if err := s.cosign.run(ctx, join([]string{"sign-blob"}, s.sign, []string{"--bundle", bundle, f})...); err != nil {
			return nil, err
		}
		if err := s.verifyBlob(ctx, f, bundle); err != nil {
			return nil, err
		}
		lines = append(lines, "blob signed and verified: "+f+" with "+bundle)
	}
	last := files[len(files)-1]
	tampered := last + ".tampered"
	if err := tamper(last, tampered); err != nil {
		return nil, err
	}
	defer os.Remove(tampered)
	if err := s.verifyBlob(ctx, tampered, last+".sigstore.json"); err == nil {
		return nil, fmt.Errorf("cosign verify-blob accepted %s, a changed copy of %s: its verification proves nothing", tampered, last)
	}
	return append(lines, "refused, as it must be: "+last+" changed by one byte, against its bundle"), nil
}

func (s *signer) verifyBlob(ctx context.Context, file, bundle string) error {
	return s.cosign.run(ctx, join([]string{"verify-blob", "--bundle", bundle}, s.verify, []string{file})...)
}

func tamper(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, append(b, '\n'), 0o644)
}

func join(parts ...[]string) []string {
	var all []string
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}

// saveBundles writes the Sigstore bundles cosign attached to ref in the registry (OCI 1.1
// referrers, one bundle layer each) to PREFIX.signature.sigstore.json and
// PREFIX.sbom-attestation.sigstore.json: the dry run's registry goes away, and the workflow
// attaches the files to the GitHub release.
func saveBundles(ref name.Digest, prefix string) ([]string, error) {
	auth := remote.WithAuthFromKeychain(keychain)
	idx, err := remote.Referrers(ref, auth)
	if err != nil {
		return nil, fmt.Errorf("listing the signatures of %s: %w", ref, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, d := range im.Manifests {
		// The manifest, not the referrers index, is read for the bundle's media type and the
		// annotations: registries differ in what of them the index repeats.
		img, err := remote.Image(ref.Context().Digest(d.Digest.String()), auth)
		if err != nil {
			return nil, err
		}
		m, err := img.Manifest()
		if err != nil {
			return nil, err
		}
		if len(m.Layers) != 1 || !strings.Contains(string(m.Layers[0].MediaType), "sigstore.bundle") {
			continue
		}
		kind := "signature"
		if strings.Contains(m.Annotations["dev.sigstore.bundle.predicateType"], "cyclonedx") {
			kind = "sbom-attestation"
		}
		p := prefix + "." + kind + ".sigstore.json"
		if err := writeFirstLayer(img, p); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%s has no Sigstore bundle among its %d referrers", ref, len(im.Manifests))
	}
	return paths, nil
}

// helmDigestRE reads the digest `helm push` prints.
var helmDigestRE = regexp.MustCompile(`Digest: (sha256:[0-9a-f]{64})`)

// pushChart runs `helm push` into REGISTRY/charts and returns the chart's reference by digest.
func pushChart(ctx context.Context, o options, chart, registry string, insecure bool, log io.Writer) (string, error) {
	helm, err := newTool("helm", o.helmCmd, log)
	if err != nil {
		return "", err
	}
	args := []string{"push", chart, "oci://" + registry + "/charts"}
	if insecure {
		args = append(args, "--plain-http")
	}
	out, err := helm.output(ctx, args...)
	if err != nil {
		return "", err
	}
	m := helmDigestRE.FindSubmatch(out)
	if m == nil {
		return "", errors.New("helm push printed no digest")
	}
	return registry + "/charts/tailor@" + string(m[1]), nil
}
