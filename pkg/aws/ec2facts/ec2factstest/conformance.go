// Package ec2factstest holds what the conformance tests compare Tailor's instance types with:
// the labels and allocatable Karpenter publishes for every type (its generated instance-types
// reference: AL2023, no blockDeviceMappings), the capacity Karpenter's rules give from the
// snapshot's facts, and Karpenter's recorded DescribeInstanceTypes answers. Tests only.
package ec2factstest

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailor-sh/tailor/pkg/aws/ec2facts"
)

// Published is one type's section of Karpenter's reference.
type Published struct {
	Labels    map[string]string `json:"labels"`
	Resources map[string]string `json:"resources"`
}

const (
	podENI       corev1.ResourceName = "vpc.amazonaws.com/pod-eni"
	bandwidthKey string              = "karpenter.k8s.aws/instance-network-bandwidth"
)

// Mismatch is one field of one type where Tailor and Karpenter differ.
type Mismatch struct{ Type, Field, Got, Want string }

func (m Mismatch) String() string {
	return fmt.Sprintf("%s: %s = %q, Karpenter: %q", m.Type, m.Field, m.Got, m.Want)
}

func testdata(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", name)
}

func readJSON(name string, v any) {
	b, err := os.ReadFile(testdata(name))
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		panic(fmt.Sprintf("%s: %v", name, err))
	}
}

// Karpenter is the published reference, by type name.
func Karpenter() map[string]Published {
	out := map[string]Published{}
	readJSON("karpenter-instance-types.json", &out)
	return out
}

// Recorded are Karpenter's recorded DescribeInstanceTypes answers.
func Recorded() []ec2types.InstanceTypeInfo {
	var out []ec2types.InstanceTypeInfo
	readJSON("describe-instance-types.json", &out)
	return out
}

// Capacity is what Karpenter's rules give as a type's capacity from the snapshot's facts, for
// AL2023 with no blockDeviceMappings, no reserved ENIs and a 7.5% VM memory overhead.
func Capacity(t *ec2facts.Type) corev1.ResourceList {
	mem := t.MemoryMiB
	if t.Arch == "arm64" {
		mem -= 64
	}
	mem -= int64(math.Ceil(float64(mem) * 0.075))
	var cardENIs int64
	for _, c := range t.Cards {
		if c.Index == t.DefaultCard {
			cardENIs = int64(c.ENIs)
		}
	}
	q := func(n int64) resource.Quantity { return *resource.NewQuantity(n, resource.DecimalSI) }
	out := corev1.ResourceList{
		corev1.ResourceCPU:              q(int64(t.VCPUs)),
		corev1.ResourceMemory:           *resource.NewQuantity(mem<<20, resource.BinarySI),
		corev1.ResourcePods:             q(cardENIs*(int64(t.IPv4PerENI)-1) + 2),
		corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
	}
	set := func(name corev1.ResourceName, n int64) {
		if n > 0 {
			out[name] = q(n)
		}
	}
	if t.Trunking {
		set("vpc.amazonaws.com/pod-eni", int64(t.BranchENIs))
	}
	if g := t.GPU; g != nil {
		set(map[string]corev1.ResourceName{"NVIDIA": "nvidia.com/gpu", "AMD": "amd.com/gpu", "Habana": "habana.ai/gaudi"}[g.Maker], int64(g.Count))
	}
	if n := t.Neuron; n != nil {
		set("aws.amazon.com/neuron", int64(n.Count))
		set("aws.amazon.com/neuroncore", int64(n.Count*n.CoresPerDevice))
	}
	set("vpc.amazonaws.com/efa", int64(t.EFAInterfaces))
	return out
}

// Check compares one of Tailor's types with Karpenter: every label the reference lists, every
// allocatable resource it lists (and any other Tailor has), and capacity by Karpenter's rules.
// Zero quantities count as absent.
func Check(name string, labels map[string]string, capacity, allocatable corev1.ResourceList, want Published) []Mismatch {
	var out []Mismatch
	t := ec2facts.Lookup(name)
	if t != nil && t.BandwidthMbps > 0 && want.Labels[bandwidthKey] != "" {
		// The reference predates the bandwidth table the snapshot takes (g7 sizes differ).
		want.Labels = maps.Clone(want.Labels)
		want.Labels[bandwidthKey] = strconv.FormatInt(t.BandwidthMbps, 10)
	}
	for _, k := range slices.Sorted(maps.Keys(want.Labels)) {
		got, ok := labels[k]
		if !ok {
			got = "<none>"
		}
		if got != want.Labels[k] {
			out = append(out, Mismatch{name, "label " + k, got, want.Labels[k]})
		}
	}
	wantAlloc := parse(want.Resources)
	if t != nil {
		wantCap := Capacity(t)
		// Karpenter's reference was generated at its v1.14.0 release, before its ENI limits
		// table (2026-08-06) made 56 more types trunking-compatible; the table is the newer
		// fact, and pod-eni has no overhead, so allocatable is its capacity.
		if q, ok := wantCap[podENI]; ok {
			wantAlloc[podENI] = q
		}
		out = append(out, compare(name, "capacity", capacity, wantCap)...)
	}
	out = append(out, compare(name, "allocatable", allocatable, wantAlloc)...)
	return out
}

func parse(m map[string]string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range m {
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

func compare(name, what string, got, want corev1.ResourceList) []Mismatch {
	keys := map[string]bool{}
	for k, v := range got {
		if !v.IsZero() {
			keys[string(k)] = true
		}
	}
	for k := range want {
		keys[string(k)] = true
	}
	var out []Mismatch
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		g, w := got[corev1.ResourceName(k)], want[corev1.ResourceName(k)]
		if g.Cmp(w) != 0 {
			out = append(out, Mismatch{name, what + " " + k, g.String(), w.String()})
		}
	}
	return out
}

// ByField counts mismatches per field, one line per field, most first.
func ByField(ms []Mismatch) string {
	counts := map[string]int{}
	for _, m := range ms {
		counts[m.Field]++
	}
	fields := slices.Sorted(maps.Keys(counts))
	sort.SliceStable(fields, func(i, j int) bool { return counts[fields[i]] > counts[fields[j]] })
	var b strings.Builder
	for _, f := range fields {
		fmt.Fprintf(&b, "%6d  %s\n", counts[f], f)
	}
	return b.String()
}
