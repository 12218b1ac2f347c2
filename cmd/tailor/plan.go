package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/plan"
	"github.com/tailor-sh/tailor/pkg/sandbox"
)

type planFlags struct {
	files         []string
	output        string
	schedulerName string
	account       account
}

func newPlanCommand() *cobra.Command {
	f := &planFlags{}
	cmd := &cobra.Command{
		Use:   "plan -f PATH... [-o json]",
		Short: "Show, offline, the NodeClaims Tailor would launch for a set of manifests",
		Long: `plan reads NodePools, EC2NodeClasses, Pods, Deployments, ReplicaSets, StatefulSets, Jobs
and DaemonSets (and, optionally, existing Nodes with the Pods bound to them, Namespaces,
StorageClasses and PersistentVolumeClaims) from files or folders, expands workloads into the pods
their controllers would create, and runs Tailor's planner with kube-scheduler's default Filter
plugins over the simulated catalog. It prints the NodeClaims it would launch, the pods no NodePool
can hold and why, the total price per hour, and a lower bound on the price of any fleet that holds
the same pods. Nothing is created anywhere.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPlan(cmd.Context(), cmd.OutOrStdout(), f) },
	}
	fs := cmd.Flags()
	fs.StringArrayVarP(&f.files, "filename", "f", nil, "manifest file or folder to read (repeatable)")
	fs.StringVarP(&f.output, "output", "o", "", "output format: json (default: a table for people)")
	fs.StringVar(&f.account.cluster, "cluster-name", "", "warn where an EC2NodeClass names another cluster (karpenter.sh/discovery tags, KarpenterNodeRole-NAME) than this one")
	fs.StringVar(&f.account.region, "region", fake.Region, "the region whose zones the simulated catalog is offered in")
	fs.StringVar(&f.schedulerName, "scheduler-name", "tailor", "plan the unbound pods with this schedulerName")
	return cmd
}

func runPlan(ctx context.Context, out io.Writer, f *planFlags) error {
	if f.output != "" && f.output != "json" {
		return fmt.Errorf("-o %q: the only format is json", f.output)
	}
	if len(f.files) == 0 {
		return fmt.Errorf("no manifests: pass -f with a file or folder")
	}
	catalog, err := fake.CatalogIn(f.account.region)
	if err != nil {
		return fmt.Errorf("--region: %w", err)
	}
	files, err := sandbox.ManifestFiles(f.files)
	if err != nil {
		return err
	}
	m, err := plan.Load(files)
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	// The offline simulator's informers run until the plan is done.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res, err := plan.Run(ctx, m, plan.Options{SchedulerName: f.schedulerName, Catalog: catalog,
		CatalogName: "fake, " + f.account.region + " (" + fake.Simulated + ")", ClusterName: f.account.cluster})
	if err != nil {
		return err
	}
	if f.output == "json" {
		return res.WriteJSON(out)
	}
	return res.WriteText(out)
}
