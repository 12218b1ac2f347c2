// Command ec2facts extracts EC2's published instance-type facts from a git checkout (bare or not)
// of aws/karpenter-provider-aws into pkg/aws/ec2facts: the catalog (snapshot.json), Karpenter's
// published labels and allocatable per type, and its recorded DescribeInstanceTypes answers
// (testdata/), which the conformance test compares Tailor with. It reads figures only; no code
// of the source is copied. Run by `make ec2facts KARPENTER_AWS_REPO=...`, or by hand
// (docs/reference/ec2-catalog.md):
//
//	go run ./hack/ec2facts -repo /path/to/karpenter-provider-aws [-commit HEAD]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/tailor-sh/tailor/pkg/aws/ec2facts"
)

// The files read, relative to the source repository's root.
const (
	docFile       = "website/content/en/preview/reference/instance-types.md"
	limitsFile    = "pkg/providers/instancetype/zz_generated.vpclimits.go"
	bandwidthFile = "pkg/providers/instancetype/zz_generated.bandwidth.go"
	pricingFile   = "pkg/providers/pricing/zz_generated.pricing_aws.go"
	govPricesFile = "pkg/providers/pricing/zz_generated.pricing_aws_us_gov.go"
	recordedFile  = "pkg/fake/zz_generated.describe_instance_types.go"
)

func main() {
	repo := flag.String("repo", "", "git directory or checkout of github.com/aws/karpenter-provider-aws")
	commit := flag.String("commit", "HEAD", "commit to read")
	out := flag.String("out", "pkg/aws/ec2facts", "folder to write snapshot.json and testdata/ into")
	flag.Parse()
	if *repo == "" {
		fmt.Fprintln(os.Stderr, "ec2facts: -repo is required")
		os.Exit(2)
	}
	if err := run(*repo, *commit, *out); err != nil {
		fmt.Fprintln(os.Stderr, "ec2facts:", err)
		os.Exit(1)
	}
}

func git(repo string, args ...string) ([]byte, error) {
	b, err := exec.Command("git", append([]string{"-C", repo}, args...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return b, nil
}

func run(repo, commit, out string) error {
	meta, err := git(repo, "log", "-1", "--date=short", "--format=%H %cd", commit)
	if err != nil {
		return err
	}
	sha, date, _ := strings.Cut(strings.TrimSpace(string(meta)), " ")
	files := map[string][]byte{}
	for _, f := range []string{docFile, limitsFile, bandwidthFile, pricingFile, govPricesFile, recordedFile} {
		if files[f], err = git(repo, "show", sha+":"+f); err != nil {
			return err
		}
	}
	snap := &ec2facts.Snapshot{Source: ec2facts.Source{Repository: "github.com/aws/karpenter-provider-aws", Commit: sha,
		CommitDate: date, Files: map[string]string{}}}
	for f, b := range files {
		snap.Source.Files[f] = stamp(b)
	}
	doc := parseDoc(files[docFile])
	limits, err := readVars(files[limitsFile])
	if err != nil {
		return fmt.Errorf("%s: %w", limitsFile, err)
	}
	bw, err := readVars(files[bandwidthFile])
	if err != nil {
		return fmt.Errorf("%s: %w", bandwidthFile, err)
	}
	recorded, err := readVars(files[recordedFile])
	if err != nil {
		return fmt.Errorf("%s: %w", recordedFile, err)
	}
	recordedTypes := recorded["defaultDescribeInstanceTypesOutput"].(map[string]any)["InstanceTypes"].([]any)
	usage := map[string][]string{}
	for _, r := range recordedTypes {
		m := r.(map[string]any)
		for _, u := range m["SupportedUsageClasses"].([]any) {
			usage[m["InstanceType"].(string)] = append(usage[m["InstanceType"].(string)], u.(string))
		}
	}
	var skipped []string
	for _, name := range slices.Sorted(maps.Keys(doc)) {
		lim, ok := limits["Limits"].(map[string]any)[name].(map[string]any)
		if !ok {
			skipped = append(skipped, name)
			continue
		}
		t := buildType(name, doc[name], lim, bw["InstanceTypeBandwidthMegabits"].(map[string]any))
		if u, ok := usage[name]; ok {
			t.UsageClasses = u
		}
		snap.Types = append(snap.Types, t)
	}
	if snap.OnDemandLinux, err = readPrices(files); err != nil {
		return err
	}
	if err := writeSnapshot(filepath.Join(out, "snapshot.json"), snap); err != nil {
		return err
	}
	if err := writeLines(filepath.Join(out, "testdata", "karpenter-instance-types.json"), doc); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(out, "testdata", "describe-instance-types.json"), recordedTypes); err != nil {
		return err
	}
	fmt.Printf("%d types from %s@%.12s (%s); %d documented types without ENI limits left out: %v\n",
		len(snap.Types), snap.Source.Repository, sha, date, len(skipped), skipped)
	for _, r := range slices.Sorted(maps.Keys(snap.OnDemandLinux)) {
		fmt.Printf("%s: %d published on-demand prices\n", r, len(snap.OnDemandLinux[r]))
	}
	return nil
}

// priceTables are the generated price tables read, by file: the commercial partition's (us-east-1
// only) and GovCloud's (us-gov-east-1, us-gov-west-1), both in USD. The China table
// (zz_generated.pricing_aws_cn.go, cn-north-1) is not read: its prices are in CNY, and it was
// last generated in 2024, as the source no longer refreshes it.
var priceTables = map[string]string{pricingFile: "InitialOnDemandPricesAWS", govPricesFile: "InitialOnDemandPricesUSGov"}

// readPrices merges the on-demand Linux prices of every region the price tables publish.
func readPrices(files map[string][]byte) (map[string]map[string]float64, error) {
	out := map[string]map[string]float64{}
	for _, f := range slices.Sorted(maps.Keys(priceTables)) {
		vars, err := readVars(files[f])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		table, ok := vars[priceTables[f]].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: no variable %s", f, priceTables[f])
		}
		for region, byType := range table {
			if _, dup := out[region]; dup {
				return nil, fmt.Errorf("%s: region %s is priced in two tables", f, region)
			}
			out[region] = map[string]float64{}
			for name, p := range byType.(map[string]any) {
				price, ok := p.(float64)
				if !ok || price <= 0 {
					return nil, fmt.Errorf("%s: %s %s: price %v", f, region, name, p)
				}
				out[region][name] = price
			}
		}
	}
	return out, nil
}

// stampPattern finds the time a generator wrote into its file.
var stampPattern = regexp.MustCompile(`generated at (\S+)`)

func stamp(b []byte) string {
	if m := stampPattern.FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return ""
}

// writeSnapshot writes one type per line, so a refresh's diff reads type by type.
func writeSnapshot(path string, s *ec2facts.Snapshot) error {
	var b strings.Builder
	head, _ := json.Marshal(s.Source)
	fmt.Fprintf(&b, "{\"source\": %s,\n\"types\": [\n", head)
	for i, t := range s.Types {
		line, _ := json.Marshal(t)
		b.Write(line)
		if i < len(s.Types)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("],\n\"onDemandLinux\": {\n")
	regions := slices.Sorted(maps.Keys(s.OnDemandLinux))
	for i, r := range regions {
		p, _ := json.Marshal(s.OnDemandLinux[r])
		fmt.Fprintf(&b, "%q: %s", r, p)
		if i < len(regions)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("}}\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// writeLines writes a map as a JSON object with one entry per line.
func writeLines[V any](path string, m map[string]V) error {
	var b strings.Builder
	b.WriteString("{\n")
	keys := slices.Sorted(maps.Keys(m))
	for i, key := range keys {
		v, err := json.Marshal(m[key])
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%q: %s", key, v)
		if i < len(keys)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
