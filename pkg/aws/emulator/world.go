package emulator

import (
	"fmt"
	"time"

	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// zoneID is the zone ID of the emulated region's zone name.
func (e *Emulator) zoneID(name string) string {
	for _, z := range e.zones {
		if z.Name == name {
			return z.ID
		}
	}
	return ""
}

// privateDomain is the domain of the region's private DNS names: us-east-1 kept EC2's first one.
func privateDomain(region string) string {
	if region == "us-east-1" {
		return "ec2.internal"
	}
	return region + ".compute.internal"
}

// DiscoveryTag is the tag key the seeded subnets and security group carry with the cluster name,
// the convention Karpenter's getting-started guide uses in selector terms.
const DiscoveryTag = "karpenter.sh/discovery"

// VPCID is the one VPC everything lives in.
const VPCID = "vpc-0000000000000001"

// Subnet is a subnet in the emulated VPC.
type Subnet struct {
	ID, Zone, CIDR string
	AvailableIPs   int64
	Tags           map[string]string
}

// SecurityGroup is a security group in the emulated VPC.
type SecurityGroup struct {
	ID, Name string
	Tags     map[string]string
}

// Image is an AMI.
type Image struct {
	ID, Name, Architecture, OwnerID, OwnerAlias string
	Created                                     time.Time
	// Deprecated images are still described and launchable, as on EC2.
	Deprecated bool
	Tags       map[string]string
}

type world struct {
	subnets         []*Subnet
	securityGroups  []*SecurityGroup
	images          []*Image
	parameters      map[string]string
	launchTemplates []*launchTemplate
	instances       []*Instance
	fleets          map[string]*createFleetOutput
	roles           map[string]*Role
	profiles        map[string]*InstanceProfile
	reservations    []*CapacityReservation
}

// seedWorld creates one subnet per zone and a node security group, all tagged for discovery by
// the cluster, the cluster's node IAM role (NodeRoleName), and the EKS-optimized images with the
// SSM parameters that alias selectors read.
func seedWorld(cluster, k8sVersion string, zones []fake.Zone, now time.Time) world {
	w := world{parameters: map[string]string{}, fleets: map[string]*createFleetOutput{},
		roles: map[string]*Role{}, profiles: map[string]*InstanceProfile{}}
	if cluster != "" {
		name := NodeRoleName(cluster)
		w.roles[name] = &Role{Name: name, ID: "AROA0000000000000001", Created: now.Add(-24 * time.Hour)}
	}
	discovery := map[string]string{DiscoveryTag: cluster}
	for i, z := range zones {
		tags := copyTags(discovery)
		tags["Name"] = "tailor-private-" + z.Name
		w.subnets = append(w.subnets, &Subnet{ID: fmt.Sprintf("subnet-%017x", i+1), Zone: z.Name,
			CIDR: fmt.Sprintf("10.0.%d.0/19", i*32), AvailableIPs: 8187, Tags: tags})
	}
	sgTags := copyTags(discovery)
	sgTags["Name"] = "tailor-node"
	w.securityGroups = []*SecurityGroup{{ID: "sg-00000000000000001", Name: "tailor-node", Tags: sgTags}}

	created := now.Add(-24 * time.Hour)
	release := created.Format("20060102")
	eks := "/aws/service/eks/optimized-ami/" + k8sVersion
	for i, img := range []struct{ name, arch, param string }{
		{"amazon-eks-node-al2023-x86_64-standard-" + k8sVersion + "-v" + release, "x86_64", eks + "/amazon-linux-2023/x86_64/standard/recommended/image_id"},
		{"amazon-eks-node-al2023-arm64-standard-" + k8sVersion + "-v" + release, "arm64", eks + "/amazon-linux-2023/arm64/standard/recommended/image_id"},
		{"amazon-eks-node-al2023-x86_64-nvidia-" + k8sVersion + "-v" + release, "x86_64", eks + "/amazon-linux-2023/x86_64/nvidia/recommended/image_id"},
		{"bottlerocket-aws-k8s-" + k8sVersion + "-x86_64-v1.50.0", "x86_64", "/aws/service/bottlerocket/aws-k8s-" + k8sVersion + "/x86_64/latest/image_id"},
		{"bottlerocket-aws-k8s-" + k8sVersion + "-aarch64-v1.50.0", "arm64", "/aws/service/bottlerocket/aws-k8s-" + k8sVersion + "/arm64/latest/image_id"},
		{"bottlerocket-aws-k8s-" + k8sVersion + "-nvidia-x86_64-v1.50.0", "x86_64", "/aws/service/bottlerocket/aws-k8s-" + k8sVersion + "-nvidia/x86_64/latest/image_id"},
		{"amazon-eks-node-" + k8sVersion + "-v" + release, "x86_64", eks + "/amazon-linux-2/recommended/image_id"},
		{"amazon-eks-arm64-node-" + k8sVersion + "-v" + release, "arm64", eks + "/amazon-linux-2-arm64/recommended/image_id"},
		{"amazon-eks-gpu-node-" + k8sVersion + "-v" + release, "x86_64", eks + "/amazon-linux-2-gpu/recommended/image_id"},
		// Last, so the images above keep their IDs: EKS publishes an arm64 NVIDIA AL2023 image
		// for the Graviton GPU types (g5g).
		{"amazon-eks-node-al2023-arm64-nvidia-" + k8sVersion + "-v" + release, "arm64", eks + "/amazon-linux-2023/arm64/nvidia/recommended/image_id"},
	} {
		id := fmt.Sprintf("ami-%017x", i+1)
		w.images = append(w.images, &Image{ID: id, Name: img.name, Architecture: img.arch, OwnerID: AccountID,
			OwnerAlias: "amazon", Created: created, Tags: map[string]string{}})
		w.parameters[img.param] = id
	}
	seedReleases(&w, k8sVersion, release, "1.50.0", now)
	seedWindows(&w, k8sVersion, now)
	return w
}

// AddSubnet adds a subnet, e.g. one a node class's selector will newly match.
func (e *Emulator) AddSubnet(s Subnet) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s.Tags = copyTags(s.Tags)
	e.world.subnets = append(e.world.subnets, &s)
}

// Subnets returns copies of the subnets, with their current free IP counts.
func (e *Emulator) Subnets() []Subnet {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Subnet, 0, len(e.world.subnets))
	for _, s := range e.world.subnets {
		c := *s
		c.Tags = copyTags(s.Tags)
		out = append(out, c)
	}
	return out
}

// AddSecurityGroup adds a security group.
func (e *Emulator) AddSecurityGroup(sg SecurityGroup) {
	e.mu.Lock()
	defer e.mu.Unlock()
	sg.Tags = copyTags(sg.Tags)
	e.world.securityGroups = append(e.world.securityGroups, &sg)
}

// AddImage registers an AMI.
func (e *Emulator) AddImage(img Image) {
	e.mu.Lock()
	defer e.mu.Unlock()
	img.Tags = copyTags(img.Tags)
	e.world.images = append(e.world.images, &img)
}

// SetParameter creates or overwrites an SSM parameter, e.g. to publish a new "recommended" AMI.
func (e *Emulator) SetParameter(name, value string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.world.parameters[name] = value
}

// Parameter returns an SSM parameter's value.
func (e *Emulator) Parameter(name string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.world.parameters[name]
	return v, ok
}
