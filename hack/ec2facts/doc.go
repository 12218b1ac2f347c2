package main

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"

	"github.com/tailor-sh/tailor/pkg/aws/ec2facts"
)

// docType is one type's section of Karpenter's instance-types reference: the labels and the
// allocatable resources Karpenter computes for it (AL2023, no blockDeviceMappings).
type docType struct {
	Labels    map[string]string `json:"labels"`
	Resources map[string]string `json:"resources"`
}

// parseDoc reads the "### `name`" sections and their Labels and Resources tables.
func parseDoc(b []byte) map[string]docType {
	out := map[string]docType{}
	var cur *docType
	var table map[string]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "### `"):
			name := strings.Trim(strings.TrimPrefix(line, "### "), "`")
			d := docType{Labels: map[string]string{}, Resources: map[string]string{}}
			out[name] = d
			cur, table = &d, nil
		case cur != nil && line == "#### Labels":
			table = cur.Labels
		case cur != nil && line == "#### Resources":
			table = cur.Resources
		case table != nil && strings.HasPrefix(line, "|") && !strings.HasPrefix(line, "| Label") && !strings.HasPrefix(line, "| Resource") && line != "|--|--|":
			cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|"), "|")
			if len(cells) == 2 {
				table[cells[0]] = cells[1]
			}
		}
	}
	return out
}

// ec2Spelling turns the lower-case makers Karpenter's labels carry back into EC2's spelling.
var ec2Spelling = map[string]string{"intel": "Intel", "amd": "AMD", "aws": "AWS", "apple": "Apple",
	"nvidia": "NVIDIA", "habana": "Habana", "qualcomm": "Qualcomm", "xilinx": "Xilinx"}

func spell(s string) string {
	if v, ok := ec2Spelling[s]; ok {
		return v
	}
	return s
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

func num(v any) int32 {
	n, _ := v.(int64)
	return int32(n)
}

const k = "karpenter.k8s.aws/"

// buildType joins what the reference, the ENI limits and the bandwidth table say of one type.
// The usage classes are a rule (on-demand and spot) unless EC2's recorded answer says otherwise.
func buildType(name string, d docType, lim map[string]any, bandwidth map[string]any) ec2facts.Type {
	l, r := d.Labels, d.Resources
	t := ec2facts.Type{
		Name:                name,
		VCPUs:               int32(atoi(l[k+"instance-cpu"])),
		MemoryMiB:           atoi(l[k+"instance-memory"]),
		Arch:                map[string]string{"amd64": "x86_64", "arm64": "arm64"}[l["kubernetes.io/arch"]],
		CPUMaker:            spell(l[k+"instance-cpu-manufacturer"]),
		ClockGHz:            float64(atoi(l[k+"instance-cpu-sustained-clock-speed-mhz"])) / 1000,
		LocalNVMeGB:         atoi(l[k+"instance-local-nvme"]),
		EFAInterfaces:       int32(atoi(r["vpc.amazonaws.com/efa"])),
		Trunking:            lim["IsTrunkingCompatible"] == true,
		BranchENIs:          num(lim["BranchInterface"]),
		ENIs:                num(lim["Interface"]),
		IPv4PerENI:          num(lim["IPv4PerInterface"]),
		DefaultCard:         num(lim["DefaultNetworkCardIndex"]),
		EBSBandwidthMbps:    atoi(l[k+"instance-ebs-bandwidth"]),
		Hypervisor:          l[k+"instance-hypervisor"],
		BareMetal:           lim["IsBareMetal"] == true,
		EncryptionInTransit: l[k+"instance-encryption-in-transit-supported"] == "true",
		UsageClasses:        []string{"on-demand", "spot"},
	}
	if !t.Trunking {
		t.BranchENIs = 0
	}
	for _, c := range lim["NetworkCards"].([]any) {
		card := c.(map[string]any)
		t.Cards = append(t.Cards, ec2facts.Card{Index: num(card["NetworkCardIndex"]), ENIs: num(card["MaximumNetworkInterfaces"])})
	}
	if v, ok := bandwidth[name].(int64); ok {
		t.BandwidthMbps = v
	} else {
		t.BandwidthMbps = atoi(l[k+"instance-network-bandwidth"])
	}
	if gm, ok := l[k+"instance-gpu-manufacturer"]; ok {
		t.GPU = &ec2facts.GPU{Name: l[k+"instance-gpu-name"], Maker: spell(gm), Count: int32(atoi(l[k+"instance-gpu-count"])),
			MemoryMiB: int32(atoi(l[k+"instance-gpu-memory"]))}
	}
	if n := atoi(r["aws.amazon.com/neuron"]); n > 0 {
		t.Neuron = &ec2facts.Neuron{Name: l[k+"instance-accelerator-name"], Count: int32(n), CoresPerDevice: int32(atoi(r["aws.amazon.com/neuroncore"]) / n)}
	} else if an, ok := l[k+"instance-accelerator-name"]; ok {
		t.Accelerator = &ec2facts.Accelerator{Name: an, Maker: spell(l[k+"instance-accelerator-manufacturer"]),
			Count: int32(atoi(l[k+"instance-accelerator-count"]))}
	}
	return t
}
