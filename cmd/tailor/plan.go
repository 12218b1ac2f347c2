package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/ec2facts"
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
plugins over EC2's instance types and on-demand prices in --region, from the snapshot of EC2's
published facts built into Tailor (its date is printed; spot prices follow a documented rule,
see docs/reference/ec2-catalog.md). It prints the NodeClaims it would launch, the pods no NodePool
can hold and why, the total price per hour, and a lower bound on the price of any fleet that holds
the same pods. Nothing is created anywhere.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPlan(cmd.Context(), cmd.OutOrStdout(), f) },
	}
	fs := cmd.Flags()
	fs.StringArrayVarP(&f.files, "filename", "f", nil, "manifest file or folder to read (repeatable)")
	fs.StringVarP(&f.output, "output", "o", "", "output format: json (default: a table for people)")
	fs.StringVar(&f.account.cluster, "cluster-name", "", "warn where an EC2NodeClass names another cluster (karpenter.sh/discovery tags, KarpenterNodeRole-NAME) than this one")
	fs.StringVar(&f.account.region, "region", fake.Region, "the region whose instance types, prices and zones to plan over")
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
	zones, err := fake.RegionZones(f.account.region)
	if err != nil {
		return fmt.Errorf("--region: %w", err)
	}
	catalog, err := tailoraws.FactsCatalog(f.account.region, fake.ZoneNames(zones))
	if err != nil {
		return err
	}
	catalogName := "EC2, " + f.account.region + ", snapshot of " + ec2facts.Date()
	switch {
	case !ec2facts.Modelled(f.account.region):
		catalogName += "; " + f.account.region + " is not in the snapshot, so " + ec2facts.FallbackRegion + "'s types and prices stand in"
	case !ec2facts.Published(f.account.region):
		catalogName += "; on-demand prices by " + ec2facts.PriceSource(f.account.region)
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
		CatalogName: catalogName, ClusterName: f.account.cluster})
	if err != nil {
		return err
	}
	if f.output == "json" {
		return res.WriteJSON(out)
	}
	return res.WriteText(out)
}
