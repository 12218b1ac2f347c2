package containerimage

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/version"
)

// GoBuild cross-compiles pkg (as `go build` takes it, run in dir) for b's platform into
// b.Path: static (CGO_ENABLED=0, for an image with no libc), with the build machine's paths
// trimmed (-trimpath, so the same commit gives the same bytes anywhere), without the symbol
// table and DWARF (-s -w, as Kubernetes' release builds; stack traces keep their names), and
// stamped with ldflags. The go command's output goes to log.
func GoBuild(ctx context.Context, goTool, dir, pkg string, b Binary, ldflags []string, log io.Writer) error {
	for _, f := range ldflags {
		if strings.ContainsAny(f, " \t\n'\"") {
			return fmt.Errorf("linker flag %q: values must not hold spaces or quotes", f)
		}
	}
	flags := append([]string{"-s", "-w"}, ldflags...)
	cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-ldflags="+strings.Join(flags, " "), "-o", b.Path, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+b.OS, "GOARCH="+b.Arch)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s for %s: %w", pkg, b.Platform(), err)
	}
	return nil
}

// ModuleVersion is the version of module that the main module in dir builds with.
func ModuleVersion(ctx context.Context, goTool, dir, module string) (string, error) {
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, goTool, "list", "-m", "-f", "{{.Version}}", module)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go list -m %s in %s: %w: %s", module, dir, err, stderr.String())
	}
	return strings.TrimSpace(out.String()), nil
}

const kubeVersionPkg = "k8s.io/component-base/version"

// KubeVersionLDFlags stamps a binary built on k8s.io/component-base (kube-scheduler's command)
// with its version, which `--version` prints and the kubernetes_build_info metric reports.
//
// That version is not free text: the scheduler parses it at start as its Kubernetes binary
// version, which picks the feature gates' defaults, and panics if it does not parse. So it is
// the Kubernetes version the binary is built from, with build (e.g. "tailor-v0.3.0") as
// semver build metadata, which the parse ignores: v1.36.3+tailor-v0.3.0. An unset version
// would be v0.0.0 and fall back to the built-in Kubernetes version, losing ours.
func KubeVersionLDFlags(kubeVersion, build, revision string, built time.Time) ([]string, error) {
	kv, err := version.ParseSemantic(kubeVersion)
	if err != nil {
		return nil, fmt.Errorf("the Kubernetes version %q the binary is built from: %w", kubeVersion, err)
	}
	if kv.BuildMetadata() != "" {
		return nil, fmt.Errorf("the Kubernetes version %q the binary is built from already has build metadata", kubeVersion)
	}
	gitVersion := "v" + strings.TrimPrefix(kubeVersion, "v") + "+" + build
	v, err := version.ParseSemantic(gitVersion)
	if err != nil || v.BuildMetadata() != build || v.Major() != kv.Major() || v.Minor() != kv.Minor() {
		return nil, fmt.Errorf("version %q does not fit in the scheduler's version %q as build metadata: use letters, digits, '.' and '-' only", build, gitVersion)
	}
	flags := []string{
		"-X", kubeVersionPkg + ".gitMajor=" + fmt.Sprint(kv.Major()),
		"-X", kubeVersionPkg + ".gitMinor=" + fmt.Sprint(kv.Minor()),
		"-X", kubeVersionPkg + ".gitVersion=" + gitVersion,
		"-X", kubeVersionPkg + ".buildDate=" + built.UTC().Format(time.RFC3339),
	}
	if revision != "" {
		flags = append(flags, "-X", kubeVersionPkg+".gitCommit="+revision)
	}
	return flags, nil
}

// elfMachines maps GOARCH to the ELF machine its binaries declare.
var elfMachines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "arm": elf.EM_ARM,
	"ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV,
}

// checkStatic reports whether the binary at b.Path is an ELF executable for b's architecture
// that needs no dynamic loader: an image with nothing but the binary could not start it
// otherwise, and would fail only when a pod runs it.
func checkStatic(b Binary) error {
	if b.OS != "linux" {
		return nil
	}
	f, err := elf.Open(b.Path)
	if err != nil {
		return fmt.Errorf("binary %s for %s is not an ELF executable: %w", b.Path, b.Platform(), err)
	}
	defer func() { _ = f.Close() }()
	if want, ok := elfMachines[b.Arch]; ok && f.Machine != want {
		return fmt.Errorf("binary %s is built for %s, not %s", b.Path, f.Machine, b.Platform())
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("binary %s for %s is dynamically linked: build it with CGO_ENABLED=0", b.Path, b.Platform())
		}
	}
	return nil
}
