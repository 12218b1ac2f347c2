package aws_test

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
)

// openClaim asks for whatever on-demand type holds the requests and meets the requirements.
func openClaim(name string, requests corev1.ResourceList, reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodeClaim {
	c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name),
		Labels: map[string]string{karpv1.NodePoolLabelKey: "default", "team": "a"}}}
	c.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	c.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "a", Effect: corev1.TaintEffectNoSchedule}}
	c.Spec.Resources.Requests = requests
	c.Spec.Requirements = append([]karpv1.NodeSelectorRequirementWithMinValues{
		{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
		{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"default"}},
	}, reqs...)
	return c
}

// launchTemplateOf reads the launched instance's template back through DescribeLaunchTemplateVersions.
func (e *env) launchTemplateOf(t *testing.T, providerID string) *ec2types.ResponseLaunchTemplateData {
	t.Helper()
	cfg, err := tailoraws.SDKConfig(context.Background(), tailoraws.Options{Endpoint: e.emu.URL(), RetryMaxAttempts: 3, RetryMaxBackoff: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, inst := range e.emu.Instances() {
		if inst.ProviderID() != providerID {
			continue
		}
		out, err := ec2.NewFromConfig(cfg).DescribeLaunchTemplateVersions(context.Background(), &ec2.DescribeLaunchTemplateVersionsInput{
			LaunchTemplateName: aws.String(inst.LaunchTemplate), Versions: []string{"$Latest"}})
		if err != nil {
			t.Fatal(err)
		}
		return out.LaunchTemplateVersions[0].LaunchTemplateData
	}
	t.Fatalf("no instance %s", providerID)
	return nil
}

// TestAcceleratorsGetMatchingTypes: a claim for NVIDIA GPUs, AMD GPUs or Neuron devices launches
// a type that has them, labelled as Karpenter labels it, and its node registers them.
func TestAcceleratorsGetMatchingTypes(t *testing.T) {
	for _, tc := range []struct {
		resource corev1.ResourceName
		labels   map[string]string
	}{
		{awsv1.ResourceNVIDIAGPU, map[string]string{awsv1.LabelInstanceGPUManufacturer: "nvidia"}},
		{awsv1.ResourceAMDGPU, map[string]string{awsv1.LabelInstanceGPUManufacturer: "amd", awsv1.LabelInstanceGPUName: "radeon-pro-v520"}},
		{awsv1.ResourceAWSNeuron, map[string]string{awsv1.LabelInstanceAcceleratorManufacturer: "aws", awsv1.LabelInstanceAcceleratorName: "inferentia"}},
	} {
		t.Run(string(tc.resource), func(t *testing.T) {
			e := newEnv(t, emulator.Options{})
			got, err := e.provider.Create(context.Background(), openClaim("accel", corev1.ResourceList{tc.resource: resource.MustParse("1")}))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.labels {
				if got.Labels[k] != v {
					t.Errorf("%s: label %s = %q, want %q", got.Labels[corev1.LabelInstanceTypeStable], k, got.Labels[k], v)
				}
			}
			if q := got.Status.Allocatable[tc.resource]; q.Value() < 1 {
				t.Errorf("%s: allocatable %s = %s", got.Labels[corev1.LabelInstanceTypeStable], tc.resource, q.String())
			}
			l := <-e.launches
			checkNode(t, got, l)
			if want, have := got.Status.Allocatable[tc.resource], emulator.NodeFor(l).Status.Allocatable[tc.resource]; want.Cmp(have) != 0 {
				t.Errorf("%s: claim promised %s, node registers %s", tc.resource, want.String(), have.String())
			}
		})
	}
}

// TestEFA: a claim asking for EFA devices launches with one EFA interface per network card the
// type has EFA on, and its node registers them; a claim that does not ask launches an EFA-capable
// type with EC2's default interface and promises no EFA devices.
func TestEFA(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	ctx := context.Background()
	got, err := e.provider.Create(ctx, openClaim("efa", corev1.ResourceList{awsv1.ResourceEFA: resource.MustParse("4")}))
	if err != nil {
		t.Fatal(err)
	}
	efa := got.Status.Capacity[awsv1.ResourceEFA]
	if efa.Value() < 4 {
		t.Fatalf("%s: capacity %s = %s, want at least 4", got.Labels[corev1.LabelInstanceTypeStable], awsv1.ResourceEFA, efa.String())
	}
	data := e.launchTemplateOf(t, got.Status.ProviderID)
	if int64(len(data.NetworkInterfaces)) != efa.Value() || len(data.SecurityGroupIds) != 0 {
		t.Fatalf("template interfaces %d, groups %v; want %d EFA interfaces carrying the groups", len(data.NetworkInterfaces), data.SecurityGroupIds, efa.Value())
	}
	for i, n := range data.NetworkInterfaces {
		if aws.ToString(n.InterfaceType) != "efa" || aws.ToInt32(n.NetworkCardIndex) != int32(i) || aws.ToInt32(n.DeviceIndex) != min(int32(i), 1) || len(n.Groups) == 0 {
			t.Errorf("interface %d: type %s card %d device %d groups %v", i, aws.ToString(n.InterfaceType), aws.ToInt32(n.NetworkCardIndex), aws.ToInt32(n.DeviceIndex), n.Groups)
		}
	}
	l := <-e.launches
	checkNode(t, got, l)
	if have := emulator.NodeFor(l).Status.Allocatable[awsv1.ResourceEFA]; have.Cmp(efa) != 0 {
		t.Errorf("node registers %s EFA devices, claim promised %s", have.String(), efa.String())
	}

	plain, err := e.provider.Create(ctx, openClaim("plain", nil, karpv1.NodeSelectorRequirementWithMinValues{
		Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c7g.16xlarge"}}))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.Status.Capacity[awsv1.ResourceEFA]; ok {
		t.Errorf("claim without EFA requests promises %v", plain.Status.Capacity)
	}
	if data := e.launchTemplateOf(t, plain.Status.ProviderID); len(data.NetworkInterfaces) != 0 || len(data.SecurityGroupIds) == 0 {
		t.Errorf("template of a claim without EFA: interfaces %d, groups %v", len(data.NetworkInterfaces), data.SecurityGroupIds)
	}
	l = <-e.launches
	if _, ok := emulator.NodeFor(l).Status.Allocatable[awsv1.ResourceEFA]; ok {
		t.Errorf("node launched without EFA interfaces registers EFA devices")
	}
}

// TestAssociatePublicIPAddress: the node class's choice is on the template's primary interface,
// which then carries the security groups; unset, the template keeps EC2's default interface.
func TestAssociatePublicIPAddress(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  *bool
	}{{"true", aws.Bool(true)}, {"false", aws.Bool(false)}, {"unset", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, emulator.Options{})
			nc := defaultClass()
			nc.Spec.AssociatePublicIPAddress = tc.set
			e.setClass(nc)
			got, err := e.provider.Create(context.Background(), claim("ip", karpv1.CapacityTypeOnDemand, "m5.large"))
			if err != nil {
				t.Fatal(err)
			}
			data := e.launchTemplateOf(t, got.Status.ProviderID)
			if tc.set == nil {
				if len(data.NetworkInterfaces) != 0 || len(data.SecurityGroupIds) == 0 {
					t.Fatalf("interfaces %+v, groups %v; want EC2's default interface", data.NetworkInterfaces, data.SecurityGroupIds)
				}
				return
			}
			if len(data.NetworkInterfaces) != 1 || len(data.SecurityGroupIds) != 0 {
				t.Fatalf("%d interfaces, template groups %v; want one primary interface", len(data.NetworkInterfaces), data.SecurityGroupIds)
			}
			n := data.NetworkInterfaces[0]
			if n.AssociatePublicIpAddress == nil || *n.AssociatePublicIpAddress != *tc.set || aws.ToInt32(n.DeviceIndex) != 0 || len(n.Groups) == 0 {
				t.Errorf("interface: public %v device %d groups %v, want %v on device 0", n.AssociatePublicIpAddress, aws.ToInt32(n.DeviceIndex), n.Groups, *tc.set)
			}
			checkNode(t, got, <-e.launches)
		})
	}
}

// TestInstanceStore: Karpenter's instance-store NodePool (instance-local-nvme Gt 300) finds
// types; with instanceStorePolicy RAID0 they offer their NVMe as ephemeral-storage, the user data
// builds the array, and a claim for more than an EBS root holds lands on one whose node agrees.
func TestInstanceStore(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	ctx := context.Background()
	gt300 := karpv1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelInstanceLocalNVME, Operator: corev1.NodeSelectorOpGt, Values: []string{"300"}}
	got, err := e.provider.Create(ctx, openClaim("nvme", nil, gt300))
	if err != nil {
		t.Fatal(err)
	}
	if gb, _ := strconv.Atoi(got.Labels[awsv1.LabelInstanceLocalNVME]); gb <= 300 {
		t.Errorf("%s has instance-local-nvme %q, want over 300", got.Labels[corev1.LabelInstanceTypeStable], got.Labels[awsv1.LabelInstanceLocalNVME])
	}
	// Without the policy the kubelet's disk stays the 20 GiB root volume.
	if q := got.Status.Capacity[corev1.ResourceEphemeralStorage]; q.Cmp(resource.MustParse("20Gi")) != 0 {
		t.Errorf("ephemeral-storage capacity %s without RAID0, want the 20Gi root", q.String())
	}
	<-e.launches

	nc := defaultClass()
	policy := awsv1.InstanceStorePolicyRAID0
	nc.Spec.InstanceStorePolicy = &policy
	e.setClass(nc)
	its, err := e.provider.InstanceTypes(ctx, pool())
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		want := resource.MustParse("20Gi")
		switch it.Name {
		case "m6id.xlarge":
			want = resource.MustParse("237G")
		case "i4i.32xlarge":
			want = resource.MustParse("30000G")
		case "m6i.xlarge", "c5d.large", "d3.xlarge":
			if it.Name == "c5d.large" {
				want = resource.MustParse("50G")
			}
			if it.Name == "d3.xlarge" {
				want = resource.MustParse("5940G") // EC2 publishes d3's store as NVMe
			}
		default:
			continue
		}
		if q := it.Capacity[corev1.ResourceEphemeralStorage]; q.Cmp(want) != 0 {
			t.Errorf("%s: ephemeral-storage capacity %s with RAID0, want %s", it.Name, q.String(), want.String())
		}
	}

	big, err := e.provider.Create(ctx, openClaim("big-disk", corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("100Gi")}))
	if err != nil {
		t.Fatal(err)
	}
	if big.Labels[awsv1.LabelInstanceLocalNVME] == "" {
		t.Errorf("100Gi of ephemeral storage landed on %s, which has no instance store", big.Labels[corev1.LabelInstanceTypeStable])
	}
	data := e.launchTemplateOf(t, big.Status.ProviderID)
	ud, _ := base64.StdEncoding.DecodeString(aws.ToString(data.UserData))
	if !strings.Contains(string(ud), "strategy: RAID0") {
		t.Errorf("user data does not build the array:\n%s", ud)
	}
	l := <-e.launches
	checkNode(t, big, l)
	if q := emulator.NodeFor(l).Status.Allocatable[corev1.ResourceEphemeralStorage]; q.Cmp(resource.MustParse("100Gi")) < 0 {
		t.Errorf("node allocatable ephemeral-storage %s, want over 100Gi", q.String())
	}
}
