package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// tool is a pinned command line the Makefile hands over, e.g. `go run module@vX.Y.Z`: the pins
// stay in one place, where make verify checks them, and this program only adds arguments.
type tool struct {
	name string   // for messages: cosign, helm
	argv []string // the command line before the arguments
	env  []string // added to this process's environment
	dir  string   // where it runs; empty: here
	// quiet keeps the tool's standard output out of the log.
	quiet bool
	log   io.Writer
}

func newTool(name, command string, log io.Writer, env ...string) (tool, error) {
	argv := strings.Fields(command)
	if len(argv) == 0 {
		return tool{}, fmt.Errorf("--%s is empty: pass the pinned command, e.g. go run module@vX.Y.Z", name)
	}
	return tool{name: name, argv: argv, env: env, log: log}, nil
}

// run runs the tool with args, its output going to the log, and fails with the command line.
func (t tool) run(ctx context.Context, args ...string) error {
	_, err := t.output(ctx, args...)
	return err
}

// runQuiet is run without the tool's standard output in the log, for a command that prints what
// it checked in full (verify-attestation prints the whole SBOM, base64-encoded); what it says on
// standard error, and its failure, still show.
func (t tool) runQuiet(ctx context.Context, args ...string) error {
	t.quiet = true
	_, err := t.output(ctx, args...)
	return err
}

// output runs the tool with args and returns what it printed, standard output and error both
// (helm prints a push's digest on standard error), which is logged as well.
func (t tool) output(ctx context.Context, args ...string) ([]byte, error) {
	argv := append(append([]string{}, t.argv...), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var printed bytes.Buffer
	cmd.Stderr = io.MultiWriter(&printed, t.log)
	cmd.Stdout = cmd.Stderr
	if t.quiet {
		// Not into printed: two writers of one buffer would race.
		cmd.Stdout = io.Discard
	}
	cmd.Env = append(os.Environ(), t.env...)
	cmd.Dir = t.dir
	fmt.Fprintf(t.log, "+ %s %s\n", t.name, strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		return printed.Bytes(), fmt.Errorf("%s %s: %w", t.name, strings.Join(args, " "), err)
	}
	return printed.Bytes(), nil
}
