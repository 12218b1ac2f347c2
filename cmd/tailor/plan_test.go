package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tailor-sh/tailor/pkg/aws/ec2facts"
	"github.com/tailor-sh/tailor/pkg/plan"
)

// execute runs `tailor plan args...` in this process and returns what it printed.
func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newPlanCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestPlanExamplesJSON(t *testing.T) {
	out, err := execute(t, "-f", "../../examples", "-o", "json")
	if err != nil {
		t.Fatalf("tailor plan: %v\n%s", err, out)
	}
	var res plan.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	placed := 0
	for _, c := range res.NodeClaims {
		placed += len(c.Pods)
		if c.NodePool != "default" || c.PricePerHour <= 0 || c.Options == 0 {
			t.Errorf("claim: %+v", c)
		}
		// The example NodePool allows categories c, m and r of generation 6 or newer.
		if !strings.HasPrefix(c.InstanceType, "c") && !strings.HasPrefix(c.InstanceType, "m") && !strings.HasPrefix(c.InstanceType, "r") {
			t.Errorf("instance type %s is outside the NodePool's requirements", c.InstanceType)
		}
	}
	if res.Pending != 5 || placed != 5 || len(res.Unplaceable) != 0 {
		t.Errorf("want the 5 inflate pods placed; pending %d, placed %d, unplaceable %+v", res.Pending, placed, res.Unplaceable)
	}
	if res.PricePerHour <= 0 || res.LowerBoundPerHour <= 0 || res.LowerBoundPerHour > res.PricePerHour {
		t.Errorf("price $%g/h, lower bound $%g/h", res.PricePerHour, res.LowerBoundPerHour)
	}
	// The plan is over EC2's published types, and says of which day.
	if !strings.Contains(res.Catalog, ec2facts.Load().Source.CommitDate) {
		t.Errorf("catalog %q does not give the snapshot's date %s", res.Catalog, ec2facts.Load().Source.CommitDate)
	}
}

// TestPlanRegions: each modelled region plans over its own prices; a region the snapshot does
// not model is planned over the fallback region's and says so.
func TestPlanRegions(t *testing.T) {
	// The example NodePool names us-west-2's zones; the same pool without them.
	pool, err := os.ReadFile("../../examples/nodepool.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	zones := "operator: In\n          values: [\"us-west-2a\", \"us-west-2b\", \"us-west-2c\"]"
	if !strings.Contains(string(pool), zones) {
		t.Fatalf("examples/nodepool.yaml no longer lists us-west-2's zones as %q", zones)
	}
	anyZone := strings.Replace(string(pool), zones, "operator: Exists", 1)
	if err := os.WriteFile(filepath.Join(dir, "nodepool.yaml"), []byte(anyZone), 0o600); err != nil {
		t.Fatal(err)
	}
	prices := map[string]float64{}
	for _, region := range []string{"us-east-1", "eu-west-1", "us-gov-west-1", "ap-south-1"} {
		out, err := execute(t, "-f", dir, "-f", "../../examples/inflate.yaml", "-o", "json", "--region", region)
		if err != nil {
			t.Fatalf("--region %s: %v\n%s", region, err, out)
		}
		var res plan.Result
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("output is not JSON: %v\n%s", err, out)
		}
		prices[region] = res.PricePerHour
		if modelled := !strings.Contains(res.Catalog, "not in the snapshot"); modelled != ec2facts.Modelled(region) {
			t.Errorf("--region %s: catalog %q", region, res.Catalog)
		}
		if rule := strings.Contains(res.Catalog, "rule: "); rule != (ec2facts.Modelled(region) && !ec2facts.Published(region)) {
			t.Errorf("--region %s: catalog %q says whether a rule prices it %v; published prices: %v", region, res.Catalog, rule, ec2facts.Published(region))
		}
	}
	if prices["us-gov-west-1"] <= prices["us-east-1"] {
		t.Errorf("us-gov-west-1 plans at $%g/h, us-east-1 at $%g/h: GovCloud's published prices are higher", prices["us-gov-west-1"], prices["us-east-1"])
	}
	if prices["eu-west-1"] <= prices["us-east-1"] {
		t.Errorf("eu-west-1 plans at $%g/h, us-east-1 at $%g/h: Ireland should cost more", prices["eu-west-1"], prices["us-east-1"])
	}
}

func TestPlanExamplesText(t *testing.T) {
	out, err := execute(t, "-f", "../../examples/nodepool.yaml", "-f", "../../examples/inflate.yaml")
	if err != nil {
		t.Fatalf("tailor plan: %v\n%s", err, out)
	}
	for _, want := range []string{"NodeClaims to launch", "default/inflate-", "holding 5 pods", "price/bound",
		"Warning: NodePool default refers to EC2NodeClass default, which is not in the manifests"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestPlanBadManifest(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: ok}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: many}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-f", "../../examples", "-f", dir},
		{"-f", filepath.Join(dir, "missing.yaml")},
		{"-f", "../../examples", "-o", "yaml"},
		{},
	} {
		out, err := execute(t, args...)
		if err == nil {
			t.Errorf("tailor plan %v succeeded:\n%s", args, out)
		}
	}
	_, err := execute(t, "-f", dir)
	if err == nil || !strings.Contains(err.Error(), bad+", document 2") || !strings.Contains(err.Error(), `Deployment "web"`) {
		t.Errorf("error %v does not name the file, the document and the object", err)
	}
}

// A NodePool written for us-east-1 plans with --region us-east-1, in the zone it requires; in the
// default region the same pool has no offering. --cluster-name checks the EC2NodeClass's
// discovery tags and role against the cluster.
func TestPlanRegionAndClusterName(t *testing.T) {
	out, err := execute(t, "-f", "testdata/prod-east", "--region", "us-east-1", "--cluster-name", "prod-east", "-o", "json")
	if err != nil {
		t.Fatalf("tailor plan: %v\n%s", err, out)
	}
	var res plan.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	placed := 0
	for _, c := range res.NodeClaims {
		placed += len(c.Pods)
		if c.Zone != "us-east-1a" {
			t.Errorf("claim in zone %q, the NodePool requires us-east-1a", c.Zone)
		}
	}
	if placed != 3 || len(res.Unplaceable) != 0 || len(res.Warnings) != 0 {
		t.Errorf("want the 3 pods placed without warnings; placed %d, unplaceable %+v, warnings %q", placed, res.Unplaceable, res.Warnings)
	}
	if !strings.Contains(res.Catalog, "us-east-1") {
		t.Errorf("catalog %q does not name the region", res.Catalog)
	}

	out, err = execute(t, "-f", "testdata/prod-east", "--cluster-name", "staging", "-o", "json")
	if err != nil {
		t.Fatalf("tailor plan: %v\n%s", err, out)
	}
	res = plan.Result{}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.NodeClaims) != 0 || len(res.Unplaceable) != 3 {
		t.Errorf("in us-west-2 a pool requiring us-east-1a planned %d claims, %d pods unplaceable", len(res.NodeClaims), len(res.Unplaceable))
	}
	warnings := strings.Join(res.Warnings, "\n")
	for _, want := range []string{"EC2NodeClass default: spec.subnetSelectorTerms[0].tags selects karpenter.sh/discovery=prod-east, but the cluster is staging",
		"spec.securityGroupSelectorTerms[0].tags", "spec.role is KarpenterNodeRole-prod-east"} {
		if !strings.Contains(warnings, want) {
			t.Errorf("warnings lack %q:\n%s", want, warnings)
		}
	}

	if _, err := execute(t, "-f", "testdata/prod-east", "--region", "us-east"); err == nil || !strings.Contains(err.Error(), `--region: region "us-east" is not an AWS region name`) {
		t.Errorf("--region us-east: error %v", err)
	}
}
