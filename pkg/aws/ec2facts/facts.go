// Package ec2facts is a dated snapshot of what EC2 publishes about its instance types (the data
// files aws/karpenter-provider-aws generates from EC2's DescribeInstanceTypes answers, ENI limits,
// network bandwidth table and on-demand price lists), and the documented rules that fill in what
// those files do not say (which zones offer a type, prices in regions without a published list,
// spot prices). The emulator serves it as EC2, `tailor plan` plans over it, and the AWS provider falls
// back on its prices and tables.
//
// snapshot.json is written by hack/ec2facts (`make ec2facts`; docs/reference/ec2-catalog.md says
// how to refresh it); nothing here is written by hand except the rules in rules.go.
package ec2facts

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
)

// Snapshot is the facts as hack/ec2facts extracted them.
type Snapshot struct {
	Source Source `json:"source"`
	// Types are every instance type the source documents, sorted by name.
	Types []Type `json:"types"`
	// OnDemandLinux is the published on-demand Linux price (USD per hour, shared tenancy) per
	// region and type, for the regions the source prices (us-east-1, us-gov-east-1, us-gov-west-1).
	OnDemandLinux map[string]map[string]float64 `json:"onDemandLinux"`
}

// Source says where and when the facts were taken.
type Source struct {
	Repository string `json:"repository"`
	Commit     string `json:"commit"`
	// CommitDate is the source commit's date (YYYY-MM-DD): the snapshot's date.
	CommitDate string `json:"commitDate"`
	// Files maps each file read to the time its generator stamped in it, if any.
	Files map[string]string `json:"files"`
}

// Type is one instance type as EC2 describes it. Spellings are EC2's (x86_64, Intel, NVIDIA)
// except GPU and accelerator names, which the source publishes lower-kebab-cased.
type Type struct {
	Name                string       `json:"name"`
	VCPUs               int32        `json:"vcpus"`
	MemoryMiB           int64        `json:"memoryMiB"`
	Arch                string       `json:"arch"`
	CPUMaker            string       `json:"cpuMaker"`
	ClockGHz            float64      `json:"clockGHz,omitempty"`
	GPU                 *GPU         `json:"gpu,omitempty"`
	Neuron              *Neuron      `json:"neuron,omitempty"`
	Accelerator         *Accelerator `json:"accelerator,omitempty"`
	LocalNVMeGB         int64        `json:"localNVMeGB,omitempty"`
	EFAInterfaces       int32        `json:"efaInterfaces,omitempty"`
	Trunking            bool         `json:"trunking,omitempty"`
	BranchENIs          int32        `json:"branchENIs,omitempty"`
	ENIs                int32        `json:"enis"`
	IPv4PerENI          int32        `json:"ipv4PerENI"`
	DefaultCard         int32        `json:"defaultCard,omitempty"`
	Cards               []Card       `json:"cards"`
	BandwidthMbps       int64        `json:"bandwidthMbps,omitempty"`
	EBSBandwidthMbps    int64        `json:"ebsBandwidthMbps,omitempty"`
	Hypervisor          string       `json:"hypervisor"`
	BareMetal           bool         `json:"bareMetal,omitempty"`
	EncryptionInTransit bool         `json:"encryptionInTransit,omitempty"`
	UsageClasses        []string     `json:"usageClasses"`
}

// GPU is the type's one kind of GPU; Count may be 0 on fractional-GPU types (g6f).
type GPU struct {
	Name      string `json:"name"`
	Maker     string `json:"maker"`
	Count     int32  `json:"count"`
	MemoryMiB int32  `json:"memoryMiB"`
}

// Neuron is the type's Inferentia or Trainium devices.
type Neuron struct {
	Name           string `json:"name"`
	Count          int32  `json:"count"`
	CoresPerDevice int32  `json:"coresPerDevice"`
}

// Accelerator is an inference accelerator other than Neuron (Qualcomm AI 100).
type Accelerator struct {
	Name  string `json:"name"`
	Maker string `json:"maker"`
	Count int32  `json:"count"`
}

// Card is one network card: its index and how many ENIs it takes.
type Card struct {
	Index int32 `json:"index"`
	ENIs  int32 `json:"enis"`
}

//go:embed snapshot.json
var snapshotJSON []byte

var (
	loadOnce sync.Once
	loaded   *Snapshot
	byName   map[string]*Type
)

// Load returns the embedded snapshot. It is parsed once; callers must not change it.
func Load() *Snapshot {
	loadOnce.Do(func() {
		s := &Snapshot{}
		if err := json.Unmarshal(snapshotJSON, s); err != nil {
			panic(fmt.Sprintf("ec2facts: snapshot.json does not parse (re-run hack/ec2facts): %v", err))
		}
		sort.Slice(s.Types, func(i, j int) bool { return s.Types[i].Name < s.Types[j].Name })
		byName = make(map[string]*Type, len(s.Types))
		for i := range s.Types {
			byName[s.Types[i].Name] = &s.Types[i]
		}
		loaded = s
	})
	return loaded
}

// Lookup returns the facts of one type, or nil for a type the snapshot does not know.
func Lookup(name string) *Type {
	Load()
	return byName[name]
}

// Date is the snapshot's date and source commit, as a sentence part for people.
func Date() string {
	s := Load().Source
	return fmt.Sprintf("%s (%s@%.12s)", s.CommitDate, s.Repository, s.Commit)
}
