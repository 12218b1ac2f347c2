package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/pkg/generated/clientset/versioned"
	"github.com/tailor-sh/tailor/pkg/top"
)

type topFlags struct {
	kubeconfig string
	once       bool
	output     string
	sort       string
	nodePool   string
	selector   string
	prices     string
	region     string
	decisions  int
	timeout    time.Duration
}

func newTopCommand() *cobra.Command {
	f := &topFlags{}
	cmd := &cobra.Command{
		Use:   "top [--once [-o json]]",
		Short: "A live view of the fleet: nodes, pods, cost against its lower bound, pending pods and decisions",
		Long: `top watches a cluster's nodes, pods, NodeClaims, NodePools and Events and shows, per node, its
NodePool, instance type, zone, capacity type, age, cpu and memory requested over allocatable, pods
and price; per NodePool its totals and limits; the fleet's price per hour beside the LP lower bound
for the pods that run now (as tailor plan computes it); the NodeClaims on their way; the pending
pods with what Tailor or the scheduler last said about them; and the latest disruption decisions
with what they save. Keys: s sorts, p cycles the NodePool filter, arrows scroll, q quits.

Prices (--prices): aws reads the AWS Pricing API and spot price history, with the SDK's default
credentials, in the nodes' region (or --region); against the sandbox's AWS emulator its endpoint is
read from the emulator-endpoint file beside the kubeconfig. simulated prices from the simulated
catalog of the fake cloud and tailor plan. auto (the default) is the emulator when that file is
there, simulated for the sandbox's kubeconfig otherwise, and aws for any other cluster.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTop(cmd.Context(), cmd.OutOrStdout(), f) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", sandboxKubeconfig(), "the cluster's kubeconfig (default: the one tailor sandbox writes)")
	fs.BoolVar(&f.once, "once", false, "print one snapshot and exit")
	fs.StringVarP(&f.output, "output", "o", "", "with --once: json (default: the view as text)")
	fs.StringVar(&f.sort, "sort", string(top.SortNodePool), fmt.Sprintf("order of the nodes: one of %v", top.SortKeys))
	fs.StringVar(&f.nodePool, "nodepool", "", "show only this NodePool's nodes and NodeClaims")
	fs.StringVarP(&f.selector, "selector", "l", "", "show only the nodes (and NodeClaims) this label selector matches, e.g. karpenter.sh/capacity-type=spot")
	fs.StringVar(&f.prices, "prices", "auto", "where node prices come from: auto, aws or simulated")
	fs.StringVar(&f.region, "region", "", "the region to price in (default: the nodes' topology.kubernetes.io/region)")
	fs.IntVar(&f.decisions, "decisions", 10, "how many of the latest disruption decisions to show")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "give up if the cluster cannot be listed within this long")
	return cmd
}

func sandboxKubeconfig() string { return filepath.Join(os.TempDir(), "tailor-sandbox", "kubeconfig") }

func runTop(ctx context.Context, out io.Writer, f *topFlags) error {
	if f.output != "" && (f.output != "json" || !f.once) {
		return fmt.Errorf("-o %q: the only format is json, with --once", f.output)
	}
	sortKey, err := top.ParseSortKey(f.sort)
	if err != nil {
		return err
	}
	filter := top.Filter{NodePool: f.nodePool}
	if f.selector != "" {
		if filter.Selector, err = labels.Parse(f.selector); err != nil {
			return fmt.Errorf("--selector: %w", err)
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", f.kubeconfig, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	tailor, err := versioned.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !f.once {
		// The price list logs failed refreshes; in the full-screen view they would scribble over it.
		klog.SetOutput(io.Discard)
		klog.LogToStderr(false)
	}
	src := top.Watch(ctx, kube, tailor)
	syncCtx, cancelSync := context.WithTimeout(ctx, f.timeout)
	defer cancelSync()
	if err := src.WaitForSync(syncCtx); err != nil {
		return fmt.Errorf("%s: %w", f.kubeconfig, err)
	}
	cluster, err := src.Cluster()
	if err != nil {
		return err
	}
	prices, err := choosePrices(ctx, f, cluster)
	if err != nil {
		return err
	}
	opts := top.Options{Prices: prices.pricer, PricesName: prices.name, Catalog: top.Repriced(prices.catalog, prices.pricer),
		Filter: filter, Sort: sortKey, Decisions: f.decisions}
	if !f.once {
		return top.Run(ctx, src, opts)
	}
	opts.Now = time.Now()
	snap, err := top.Build(cluster, opts)
	if err != nil {
		return err
	}
	if f.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(snap)
	}
	_, err = io.WriteString(out, top.Render(snap, top.View{Renderer: plainRenderer(out)}))
	return err
}
