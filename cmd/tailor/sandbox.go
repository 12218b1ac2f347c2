package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/sandbox"
)

type sandboxFlags struct {
	kubeconfig   string
	apply        []string
	untilSettled bool
	timeout      time.Duration
	report       string
	cloud        string
	logFile      string
	metricsAddr  string
	account      account
}

func newSandboxCommand() *cobra.Command {
	f := &sandboxFlags{}
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Run a whole cluster, a simulated fleet and Tailor in one process",
		Long: `sandbox starts etcd, kube-apiserver, kube-controller-manager's controllers (listed below),
kwok (playing every kubelet), a simulated cloud, and Tailor's scheduler, all in this process. It
writes a kubeconfig so kubectl works against it. Nothing is downloaded and no container runs.

The cloud is, by default, Tailor's real AWS provider talking to an in-process emulator of EC2,
IAM, SSM, Pricing and SQS (one SIMULATED region and account); "tailor sandbox interrupt" sends
it interruption notices. --cloud fake uses the in-memory cloud instead.

Tailor's metrics (its tailor_* names, Karpenter's karpenter_* names and kube-scheduler's own) are
served at http://ADDRESS/metrics, where --metrics-address says (by default a free port on
127.0.0.1). The URL is written to metrics-endpoint beside the kubeconfig, as the emulator's is to
emulator-endpoint, and both files are removed when the sandbox exits. With the default
--kubeconfig:

  curl "$(cat ${TMPDIR:-/tmp}/tailor-sandbox/metrics-endpoint)"

` + sandbox.Controllers + `

docs/sandbox.md says more.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSandbox(cmd.Context(), cmd.OutOrStdout(), f) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", filepath.Join(os.TempDir(), "tailor-sandbox", "kubeconfig"), "where to write the sandbox's kubeconfig")
	fs.StringArrayVar(&f.apply, "apply", nil, "manifest file or folder to apply once the cluster is up (repeatable)")
	fs.BoolVar(&f.untilSettled, "until-settled", false, "exit once every pod runs or Tailor has said why it cannot be placed")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "with --until-settled, give up after this long")
	fs.StringVar(&f.report, "report", "", "print a report when exiting: json")
	fs.StringVar(&f.cloud, "cloud", "aws", "cloud to launch capacity in: aws (the AWS provider on an in-process EC2/IAM/SSM/SQS emulator) or fake (in memory)")
	fs.StringVar(&f.account.cluster, "cluster-name", sandboxClusterName, "the cluster the emulated account is set up for: subnets and security groups tagged karpenter.sh/discovery=NAME, node role KarpenterNodeRole-NAME")
	fs.StringVar(&f.account.region, "region", fake.Region, "the emulated region, whose zones (REGIONa, REGIONb, ...) the catalog is offered in")
	fs.StringVar(&f.logFile, "log-file", "", "where the components' logs go (default: tailor.log beside the kubeconfig)")
	fs.StringVar(&f.metricsAddr, "metrics-address", "127.0.0.1:0", "where to serve /metrics (port 0: any free port); the URL is written to metrics-endpoint beside the kubeconfig")
	cmd.AddCommand(newInterruptCommand())
	return cmd
}

func runSandbox(ctx context.Context, out io.Writer, f *sandboxFlags) error {
	if f.report != "" && f.report != "json" {
		return fmt.Errorf("--report=%q: the only format is json", f.report)
	}
	if err := f.account.check(); err != nil {
		return err
	}
	dir := filepath.Dir(f.kubeconfig)
	dataDir, err := prepareSandboxFiles(f, dir)
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dataDir) }() // etcd data of a sandbox that is gone
	defer klog.Flush()

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	clouds, err := newSandboxCloud(ctx, f.cloud, f.account)
	if err != nil {
		return err
	}
	defer clouds.Close()
	tb := sandbox.NewProcessTB("sandbox", dataDir)
	defer tb.Close()
	say("starting the sandbox (logs: %s)", f.logFile)
	started := time.Now()
	cluster, err := sandbox.Start(ctx, tb, sandbox.Options{
		Dir:      dataDir,
		Clock:    clock.RealClock{},
		NewCloud: clouds.NewCloud,
		// Gangs (PodGroups) work in the sandbox as they would on a cluster with the gates on.
		FeatureGates: sandbox.GangGates,
	})
	if err != nil {
		return err
	}
	defer cluster.Stop()
	if err := copyFile(cluster.Kubeconfig, f.kubeconfig); err != nil {
		return err
	}
	say("cluster up in %.1fs; kubeconfig: %s", time.Since(started).Seconds(), f.kubeconfig)
	say("  try: kubectl --kubeconfig %s get nodeclaims,nodes,pods -A", f.kubeconfig)
	if f.metricsAddr == "" {
		f.metricsAddr = "127.0.0.1:0"
	}
	served, err := serveSandboxMetrics(ctx, f.metricsAddr, dir)
	if err != nil {
		return err
	}
	defer served.Close()
	say("metrics: %s (also in %s)", served.url, served.written)
	// The narration's watches, and the cloud's controllers, must end before the API server
	// stops, or it waits for them.
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	watchFleet(watchCtx, cluster)
	if err := clouds.start(watchCtx, cluster, f.kubeconfig); err != nil {
		return err
	}

	if len(f.apply) > 0 {
		files, err := manifestsToApply(f.apply, f.kubeconfig, dataDir)
		if err != nil {
			return err
		}
		// Stopped while applying (Ctrl-C): the sandbox winds down as usual; the manifests are not at fault.
		if err := sandbox.ApplyFiles(ctx, cluster.Config, files, func(s string) { say("%s", s) }); err != nil && ctx.Err() == nil {
			return err
		}
	}
	return runUntilDone(ctx, out, cluster, f, clouds)
}

// prepareSandboxFiles makes the kubeconfig's folder and the sandbox's data folder, and sends the
// logs to --log-file (tailor.log beside the kubeconfig by default).
func prepareSandboxFiles(f *sandboxFlags, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	// The sandbox's own files (etcd, its scheduler configuration) go in the temporary folder, not
	// beside the kubeconfig, which may well be inside a folder given to --apply.
	dataDir, err := os.MkdirTemp("", "tailor-sandbox-run-")
	if err != nil {
		return "", err
	}
	if f.logFile == "" {
		f.logFile = filepath.Join(dir, "tailor.log")
	}
	if err := logToFile(f.logFile); err != nil {
		_ = os.RemoveAll(dataDir)
		return "", err
	}
	return dataDir, nil
}

// runUntilDone waits until the user stops the sandbox (or, with --until-settled, until it
// settles or times out), then prints the report asked for.
func runUntilDone(ctx context.Context, out io.Writer, cluster *sandbox.Cluster, f *sandboxFlags, clouds *sandboxCloud) error {
	settleStart := time.Now()
	if !f.untilSettled {
		select {
		case <-ctx.Done():
		case err := <-cluster.SchedulerErr():
			return fmt.Errorf("the scheduler stopped: %v", err)
		}
		return printReport(context.Background(), out, cluster, f.report, settleStart, f.account.cluster)
	}
	settled := waitSettled(ctx, cluster, f.timeout, clouds.resolved)
	if err := printReport(ctx, out, cluster, f.report, settleStart, f.account.cluster); err != nil {
		return err
	}
	if !settled {
		return fmt.Errorf("not settled within %s", f.timeout)
	}
	return nil
}

// manifestsToApply expands --apply into its files, less the sandbox's own: the kubeconfig it
// wrote (which may be named *.yaml) and anything in its data folder. A user's manifests are never
// Kubernetes objects of those kinds, and applying them fails.
func manifestsToApply(paths []string, kubeconfig, dataDir string) ([]string, error) {
	files, err := sandbox.ManifestFiles(paths)
	if err != nil {
		return nil, err
	}
	own := func(file string) bool {
		abs, err := filepath.Abs(file)
		if err != nil {
			return false
		}
		for _, mine := range []string{kubeconfig, dataDir} {
			if m, err := filepath.Abs(mine); err == nil && (abs == m || strings.HasPrefix(abs, m+string(filepath.Separator))) {
				return true
			}
		}
		return false
	}
	out := files[:0]
	for _, file := range files {
		if !own(file) {
			out = append(out, file)
		}
	}
	return out, nil
}

// waitSettled polls until the cluster has been settled for two readings in a row, so that a
// moment between a NodeClaim's creation and the next pod's arrival does not count, and the
// cloud has resolved what it resolves (the report then says why a class is not ready).
func waitSettled(ctx context.Context, cluster *sandbox.Cluster, timeout time.Duration, resolved func(context.Context, *sandbox.Cluster) bool) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	streak := 0
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case err := <-cluster.SchedulerErr():
			say("the scheduler stopped: %v", err)
			return false
		case <-tick.C:
		}
		state, err := cluster.Read(ctx)
		if err != nil || !state.Settled() || !resolved(ctx, cluster) {
			streak = 0
			continue
		}
		if streak++; streak >= 2 {
			return true
		}
	}
}

func printReport(ctx context.Context, out io.Writer, cluster *sandbox.Cluster, format string, since time.Time, clusterName string) error {
	state, err := cluster.Read(ctx)
	if err != nil {
		return err
	}
	pools, err := cluster.Tailor.KarpenterV1().NodePools().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	report := state.Report(ctx, cluster.Cloud, pools.Items)
	report.Seconds = time.Since(since).Seconds()
	classes, err := cluster.Tailor.AWSV1().EC2NodeClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range classes.Items {
		report.NodeClasses = append(report.NodeClasses, readyWithHint(&classes.Items[i], clusterName))
	}
	if format == "" {
		say("%d nodes, $%.4f/h; %d pods", len(report.Nodes), report.PricePerHour, len(report.Pods))
		return nil
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(report)
}

// say prints a line of the sandbox's own story to stderr, keeping stdout for the report.
func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func logToFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	for name, value := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "log_file": path, "stderrthreshold": "FATAL"} {
		if err := klogSettings.Set(name, value); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o600)
}
