package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	corev1 "k8s.io/api/core/v1"

	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/ec2facts"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/top"
)

// topPrices is where `tailor top` prices nodes, and the catalog whose instance shapes bound the
// fleet's price from below (the simulated one `tailor plan` uses, repriced by the same source).
type topPrices struct {
	name    string
	pricer  top.Pricer
	catalog []*cloud.InstanceType
}

func choosePrices(ctx context.Context, f *topFlags, cluster top.Cluster) (*topPrices, error) {
	region := f.region
	if region == "" {
		region = nodesRegion(cluster.Nodes)
	}
	endpoint, emuRegion := emulatorBeside(f.kubeconfig)
	mode := f.prices
	if mode == "auto" {
		switch {
		case endpoint != "":
			mode = "aws"
		case sameFile(f.kubeconfig, sandboxKubeconfig()):
			mode = "simulated"
		default:
			mode = "aws"
		}
	}
	if endpoint != "" && f.region == "" {
		region = emuRegion
	}
	catalogRegion := region
	if catalogRegion == "" {
		catalogRegion = fake.Region
	}
	catalog, err := fake.CatalogIn(catalogRegion)
	if err != nil {
		// A real region the simulated catalog does not model: its shapes are the same anywhere.
		catalog = fake.Catalog()
	}
	switch mode {
	case "simulated":
		return &topPrices{name: "simulated catalog, " + catalogRegion + " (" + fake.Simulated + ")", pricer: top.NewCatalogPrices(catalog), catalog: catalog}, nil
	case "aws":
		list, err := tailoraws.NewPriceList(ctx, tailoraws.Options{Endpoint: endpoint, Region: region})
		if err != nil {
			return nil, fmt.Errorf("--prices aws: %w", err)
		}
		list.Refresh(ctx)
		name := "AWS Pricing API and spot price history, " + list.Region()
		if endpoint != "" {
			name += " (the sandbox's emulator: " + emulatorPrices(list.Region()) + ")"
		}
		return &topPrices{name: name, pricer: list, catalog: catalog}, nil
	}
	return nil, fmt.Errorf("--prices=%q: one of auto, aws, simulated", f.prices)
}

// emulatorPrices says what the AWS emulator's prices in the region are: EC2's published on-demand
// prices of the snapshot built into Tailor where it has the region's list, else the rule that
// stands in for it; spot prices are always the snapshot's rule, as no snapshot holds a market.
func emulatorPrices(region string) string {
	return ec2facts.PriceSource(region) + "; spot by the snapshot's rule"
}

// emulatorBeside reads the endpoint and region a running sandbox on the AWS emulator wrote beside
// its kubeconfig; empty when there is none.
func emulatorBeside(kubeconfig string) (endpoint, region string) {
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(kubeconfig), endpointFile))
	if err != nil {
		return "", ""
	}
	fields := strings.Fields(string(raw))
	if len(fields) == 0 {
		return "", ""
	}
	if len(fields) > 1 {
		region = fields[1]
	}
	return fields[0], region
}

func nodesRegion(nodes []*corev1.Node) string {
	for _, n := range nodes {
		if r := n.Labels[corev1.LabelTopologyRegion]; r != "" {
			return r
		}
	}
	return ""
}

func sameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// plainRenderer draws --once text without colours: it goes to files and scripts as often as to
// a terminal.
func plainRenderer(w io.Writer) *lipgloss.Renderer {
	r := lipgloss.NewRenderer(w)
	r.SetColorProfile(termenv.Ascii)
	return r
}
