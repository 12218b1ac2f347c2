package aws

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// launchTemplateOf is the emulator's record of the template the node's instance was launched
// from, read through its inspection hook.
func launchTemplateOf(e *env.AWS, t *testing.T, n corev1.Node) *emulator.LaunchTemplate {
	t.Helper()
	for _, inst := range e.Emu.Instances() {
		if inst.ProviderID() != n.Spec.ProviderID {
			continue
		}
		for _, lt := range e.Emu.LaunchTemplates() {
			if lt.Name == inst.LaunchTemplate {
				return &lt
			}
		}
	}
	t.Fatalf("node %s: no launch template for instance %s", n.Name, n.Spec.ProviderID)
	return nil
}

// checkInstanceStore: the pods, each asking for more scratch space than an EBS root holds, run on
// types with over 300 GB of NVMe whose instance store is the node's ephemeral storage, built by
// the RAID0 the user data asks nodeadm for.
func checkInstanceStore(t *testing.T, e *env.AWS, s *shapeState) {
	s.eachNode(t, "an instance-store type with over 300 GB of NVMe as ephemeral storage", func(n corev1.Node) bool {
		disk := n.Status.Allocatable[corev1.ResourceEphemeralStorage]
		return labelInt(n, awsv1.LabelInstanceLocalNVME) > 300 && disk.Cmp(resource.MustParse("100Gi")) > 0
	})
	for _, n := range s.nodes {
		if lt := launchTemplateOf(e, t, n); !strings.Contains(lt.UserData, "strategy: RAID0") {
			t.Errorf("node %s: the user data does not ask for the RAID0 array:\n%s", n.Name, lt.UserData)
		}
	}
}

// checkAccelerators: each pod runs on a type with the device its container asks for, labelled as
// Karpenter labels it.
func checkAccelerators(t *testing.T, e *env.AWS, s *shapeState) {
	for _, tc := range []struct {
		app      string
		resource corev1.ResourceName
		label    string
		value    string
	}{
		{"gpu-nvidia", awsv1.ResourceNVIDIAGPU, awsv1.LabelInstanceGPUManufacturer, "nvidia"},
		{"gpu-amd", awsv1.ResourceAMDGPU, awsv1.LabelInstanceGPUManufacturer, "amd"},
		{"neuron", awsv1.ResourceAWSNeuron, awsv1.LabelInstanceAcceleratorManufacturer, "aws"},
	} {
		pods := s.podsOf(tc.app)
		if len(pods) != 1 {
			t.Errorf("%s: %d pods, want 1", tc.app, len(pods))
			continue
		}
		n := s.nodeOf(pods[0])
		have := n.Status.Allocatable[tc.resource]
		if have.Value() < 1 || n.Labels[tc.label] != tc.value {
			t.Errorf("%s runs on %s (%s) with %s %s and %s=%q", tc.app, n.Name, n.Labels["node.kubernetes.io/instance-type"],
				have.String(), tc.resource, tc.label, n.Labels[tc.label])
		}
	}
}

// checkEFA: the pod runs on a node with EFA devices, launched with EFA interfaces that, as the
// class says, get no public address.
func checkEFA(t *testing.T, e *env.AWS, s *shapeState) {
	s.eachNode(t, "a node with EFA devices", func(n corev1.Node) bool {
		efa := n.Status.Allocatable[awsv1.ResourceEFA]
		return efa.Value() >= 1
	})
	for _, n := range s.nodes {
		lt := launchTemplateOf(e, t, n)
		efa := n.Status.Allocatable[awsv1.ResourceEFA]
		if int64(len(lt.NetworkInterfaces)) != efa.Value() {
			t.Errorf("node %s has %s EFA devices from %d interfaces", n.Name, efa.String(), len(lt.NetworkInterfaces))
		}
		for _, nic := range lt.NetworkInterfaces {
			if nic.InterfaceType != "efa" || nic.AssociatePublicIP == nil || *nic.AssociatePublicIP {
				t.Errorf("node %s: interface %+v, want EFA without a public address", n.Name, nic)
			}
		}
	}
}
