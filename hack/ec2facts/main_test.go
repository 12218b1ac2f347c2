package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tailor-sh/tailor/pkg/aws/ec2facts"
)

// TestReadPrices: the price tables are read per region, GovCloud's beside the commercial one,
// and a region priced in two tables or a price that is not a positive number is refused.
func TestReadPrices(t *testing.T) {
	table := func(name, body string) []byte {
		return []byte("package pricing\n\nvar " + name + " = map[string]map[ec2types.InstanceType]float64{\n" + body + "}\n")
	}
	files := map[string][]byte{
		pricingFile:   table("InitialOnDemandPricesAWS", `"us-east-1": {"m5.large": 0.096000, "c5.xlarge": 0.170000},`),
		govPricesFile: table("InitialOnDemandPricesUSGov", `"us-gov-east-1": {"m5.large": 0.121000}, "us-gov-west-1": {"m5.large": 0.121000},`),
	}
	got, err := readPrices(files)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["us-east-1"]["c5.xlarge"] != 0.17 || got["us-gov-west-1"]["m5.large"] != 0.121 {
		t.Errorf("prices %v", got)
	}
	files[govPricesFile] = table("InitialOnDemandPricesUSGov", `"us-east-1": {"m5.large": 0.121000},`)
	if _, err := readPrices(files); err == nil || !strings.Contains(err.Error(), "two tables") {
		t.Errorf("a region in two tables: %v", err)
	}
	files[govPricesFile] = table("InitialOnDemandPricesUSGov", `"us-gov-east-1": {"m5.large": 0},`)
	if _, err := readPrices(files); err == nil {
		t.Errorf("a zero price was taken")
	}
}

// TestReproducesSnapshot: run over the source the snapshot names, the extractor writes the
// checked-in files byte for byte. It needs a copy of the source (KARPENTER_AWS_REPO, as
// `make ec2facts` sets it), so it is skipped without one.
func TestReproducesSnapshot(t *testing.T) {
	repo := os.Getenv("KARPENTER_AWS_REPO")
	if repo == "" {
		t.Skip("KARPENTER_AWS_REPO is not set: no copy of the source to extract from")
	}
	commit := ec2facts.Load().Source.Commit
	if c := os.Getenv("EC2FACTS_COMMIT"); c != "" && c != "HEAD" {
		commit = c
	}
	if err := exec.Command("git", "-C", repo, "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
		t.Skipf("%s has no commit %s", repo, commit)
	}
	out := t.TempDir()
	if err := run(repo, commit, out); err != nil {
		t.Fatal(err)
	}
	checkedIn := filepath.Join("..", "..", "pkg", "aws", "ec2facts")
	for _, f := range []string{"snapshot.json", "testdata/karpenter-instance-types.json", "testdata/describe-instance-types.json"} {
		want, err := os.ReadFile(filepath.Join(checkedIn, f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the extractor over %.12s writes %d bytes, the checked-in file has %d: re-run make ec2facts", f, commit, len(got), len(want))
		}
	}
}
