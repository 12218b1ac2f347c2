// Command release packages, checks and (in the dry run) signs a Tailor release. The Makefile and
// the release workflow call it; docs/development.md#releases says what each step proves.
//
//	go run ./hack/release chart --version vX.Y.Z        the chart, versioned, into --out
//	go run ./hack/release sbom --cyclonedx CMD          the SBOM of cmd/scheduler, from the module graph
//	go run ./hack/release verify-sbom --sbom FILE       the SBOM against the image's binaries
//	go run ./hack/release dry-run --version vX.Y.Z ...  all of it into a loopback registry, signed with a throwaway key
//	go run ./hack/release publish --version vX.Y.Z ...  the same into the project's registry, keyless (CI)
//
// It takes the pinned tools it runs (cosign, helm) as command lines, so that their versions are
// pinned in the Makefile only.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: release chart|sbom|verify-sbom|dry-run|publish [flags]")
		os.Exit(2)
	}
	if err := run(ctx, os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "release "+os.Args[1]+":", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cmd string, args []string) error {
	var o options
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.StringVar(&o.version, "version", "", "the release tag, v + a semantic version, e.g. v0.3.0")
	fs.StringVar(&o.out, "out", "bin/release", "the output folder")
	fs.StringVar(&o.imageDir, "image-dir", "bin/image", "make image's output folder (its oci/ layout)")
	fs.StringVar(&o.chartDir, "chart", "charts/tailor", "the chart's folder")
	fs.StringVar(&o.binary, "binary", "tailor-scheduler", "the binary's name in the image, and the image's repository name")
	fs.StringVar(&o.sbom, "sbom", "bin/release/tailor-scheduler.cdx.json", "the CycloneDX JSON SBOM")
	fs.StringVar(&o.cyclonedxCmd, "cyclonedx", "", "the pinned cyclonedx-gomod command (sbom)")
	fs.StringVar(&o.mainPkg, "main", "cmd/scheduler", "the binary's main package, relative to the module (sbom)")
	fs.StringVar(&o.cosignCmd, "cosign", "", "the pinned cosign command (dry-run, publish)")
	fs.StringVar(&o.helmCmd, "helm", "", "the pinned helm command (dry-run, publish)")
	fs.StringVar(&o.registry, "registry", "", "publish: the registry and path the image and chart go to (REGISTRY/tailor-scheduler, oci://REGISTRY/charts/tailor)")
	fs.StringVar(&o.identity, "identity", "", "publish: the certificate identity keyless signatures must carry (the workflow's URL at its ref)")
	fs.StringVar(&o.issuer, "issuer", "https://token.actions.githubusercontent.com", "publish: the OIDC issuer of --identity")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	switch cmd {
	case "chart":
		p, err := packageChart(o.chartDir, o.version, o.out)
		if err != nil {
			return err
		}
		fmt.Println(p)
		return nil
	case "sbom":
		return writeSBOM(ctx, o.cyclonedxCmd, o.mainPkg, o.sbom, os.Stdout)
	case "verify-sbom":
		lines, err := verifySBOM(o.sbom, filepath.Join(o.imageDir, "oci"), o.binary)
		for _, l := range lines {
			fmt.Println(l)
		}
		return err
	case "dry-run":
		return dryRun(ctx, o, os.Stdout)
	case "publish":
		return release(ctx, o, os.Stdout)
	}
	return fmt.Errorf("unknown command %q: want chart, sbom, verify-sbom, dry-run or publish", cmd)
}
