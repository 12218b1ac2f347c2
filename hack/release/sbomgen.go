package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// writeSBOM runs cyclonedx-gomod's app mode: the modules the main package links, from the module
// graph (go list), with the Go standard library (-std) for vulnerability scanners. It reads the
// main module's version from git with go-git, which cannot open a linked worktree (`git
// worktree add`; "reference not found"): there it runs on a local clone of HEAD, the commit a
// release is made from. The SBOM is checked against the image's binaries afterwards either way.
func writeSBOM(ctx context.Context, cyclonedxCmd, mainPkg, out string, log io.Writer) error {
	cdx, err := newTool("cyclonedx-gomod", cyclonedxCmd, log)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return err
	}
	dir, cleanup, err := sbomSource(ctx, log)
	if err != nil {
		return err
	}
	defer cleanup()
	cdx.dir = dir
	return cdx.run(ctx, "app", "-json", "-std", "-output", abs, "-main", mainPkg, ".")
}

// sbomSource is the folder to run cyclonedx-gomod in: this one, or a local clone of HEAD when
// this is a linked worktree (a full clone: go-git reads no alternates, so not --shared).
func sbomSource(ctx context.Context, log io.Writer) (string, func(), error) {
	gitDir, err1 := git(ctx, "", "rev-parse", "--absolute-git-dir")
	common, err2 := git(ctx, "", "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err1 != nil || err2 != nil || gitDir == common {
		return ".", func() {}, nil
	}
	head, err := git(ctx, "", "rev-parse", "HEAD")
	if err != nil {
		return "", nil, err
	}
	tmp, err := os.MkdirTemp("", "tailor-sbom-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(tmp) }
	fmt.Fprintf(log, "a linked worktree: the SBOM is made from a local clone of HEAD %s in %s\n", head, tmp)
	if _, err := git(ctx, "", "clone", "--quiet", "--no-checkout", common, tmp); err != nil {
		cleanup()
		return "", nil, err
	}
	if _, err := git(ctx, tmp, "checkout", "--quiet", head); err != nil {
		cleanup()
		return "", nil, err
	}
	return tmp, cleanup, nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
