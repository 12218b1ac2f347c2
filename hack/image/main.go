// Command image builds tailor-scheduler's multi-platform OCI image without a container daemon
// or a registry (`make image`), and verifies what it built.
//
//	go run ./hack/image build [flags] ./cmd/scheduler   cross-compile, then write the image
//	go run ./hack/image verify [flags]                  check the image against the same flags
//
// Both write and read, under --out: <os>-<arch>/<name> (the binaries), oci/ (an OCI layout
// holding the index of every platform) and <name>-<os>-<arch>.tar (docker-save tarballs).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/tailor-sh/tailor/internal/containerimage"
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "build" && os.Args[1] != "verify") {
		fmt.Fprintln(os.Stderr, "usage: image build [flags] PACKAGE | image verify [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "image "+os.Args[1]+":", err)
		os.Exit(1)
	}
}

type options struct {
	spec      containerimage.Spec
	out       string
	platforms string
	epoch     int64
	goTool    string
}

func run(ctx context.Context, cmd string, args []string) error {
	var o options
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.StringVar(&o.spec.Name, "name", "tailor-scheduler", "the binary's name in the image (/NAME, the entrypoint) and the title label")
	fs.StringVar(&o.spec.Repository, "repository", "", "the image name without tag that the docker tarballs carry (default: --name)")
	fs.StringVar(&o.spec.Version, "version", "", "the image tag and version label, e.g. `git describe --tags --always --dirty`")
	fs.StringVar(&o.spec.Revision, "revision", "", "the source commit (revision label); empty leaves the label out")
	fs.StringVar(&o.spec.Source, "source", "https://github.com/tailor-sh/tailor", "the source repository's URL (source label)")
	fs.StringVar(&o.spec.Licenses, "licenses", "", "SPDX license expression (licenses label); empty leaves the label out")
	fs.Int64Var(&o.epoch, "source-date-epoch", -1, "creation time in Unix seconds, the commit time for reproducible digests")
	fs.StringVar(&o.platforms, "platforms", "linux/amd64,linux/arm64", "comma-separated os/arch list")
	fs.StringVar(&o.out, "out", "bin/image", "the output folder")
	fs.StringVar(&o.goTool, "go", "go", "the go command (build only)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.spec.Repository == "" {
		o.spec.Repository = o.spec.Name
	}
	if o.epoch < 0 {
		return fmt.Errorf("--source-date-epoch is unset: pass the commit time, `git log -1 --format=%%ct`")
	}
	o.spec.Created = time.Unix(o.epoch, 0).UTC()
	for _, p := range strings.Split(o.platforms, ",") {
		goos, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok {
			return fmt.Errorf("--platforms: %q is not os/arch, e.g. linux/arm64", p)
		}
		o.spec.Binaries = append(o.spec.Binaries, containerimage.Binary{
			OS: goos, Arch: arch, Path: filepath.Join(o.out, goos+"-"+arch, o.spec.Name),
		})
	}
	if err := o.spec.Validate(); err != nil {
		return err
	}
	if cmd == "verify" {
		if fs.NArg() != 0 {
			return fmt.Errorf("verify takes no package, got %v", fs.Args())
		}
		return verify(o)
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("build takes one package to build, e.g. ./cmd/scheduler; got %v", fs.Args())
	}
	return build(ctx, o, fs.Arg(0))
}

// kubeModule is the module whose version the scheduler reports as its Kubernetes version.
const kubeModule = "k8s.io/kubernetes"

func build(ctx context.Context, o options, pkg string) error {
	kube, err := containerimage.ModuleVersion(ctx, o.goTool, ".", kubeModule)
	if err != nil {
		return err
	}
	ldflags, err := containerimage.KubeVersionLDFlags(kube, "tailor-"+o.spec.Version, o.spec.Revision, o.spec.Created)
	if err != nil {
		return fmt.Errorf("--version: %w", err)
	}
	for _, b := range o.spec.Binaries {
		fmt.Fprintf(os.Stderr, "building %s for %s into %s\n", pkg, b.Platform(), b.Path)
		if err := containerimage.GoBuild(ctx, o.goTool, ".", pkg, b, ldflags, os.Stderr); err != nil {
			return err
		}
	}
	d, err := containerimage.Write(o.out, o.spec)
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s:%s, index %s\n", o.spec.Repository, o.spec.Version, d)
	printOutputs(o)
	return nil
}

func verify(o options) error {
	if err := containerimage.Verify(o.out, o.spec); err != nil {
		return err
	}
	fmt.Printf("verified %s: %s, user %s, entrypoint %s, labels and binaries match\n",
		o.out, o.platforms, containerimage.User, o.spec.Entrypoint())
	return nil
}

func printOutputs(o options) {
	paths := []string{containerimage.LayoutDir(o.out)}
	for _, b := range o.spec.Binaries {
		paths = append(paths, b.Path, containerimage.TarballPath(o.out, o.spec, b))
	}
	for _, p := range paths {
		fmt.Printf("  %-50s %s\n", p, size(p))
	}
}

// size is a file's size, or a folder's total, in MB.
func size(p string) string {
	var n int64
	_ = filepath.Walk(p, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}
