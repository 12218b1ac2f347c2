package ai

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// fpgaDriver is a driver no built-in template knows: only the NodePool's declaration says which
// types' nodes publish its devices.
const fpgaDriver = "fpga.example.com"

// TestDRADeclaredDevicesGetANode: a NodePool of c6i and m6i types declares, in its
// tailor.sh/devices annotation, one FPGA of model VU9P on every c6i type and one of another model
// on the m6i types. A Deployment whose claims ask for a VU9P gets nodes of c6i types only, each
// pod's claim allocated that node's FPGA, as the stand-in driver publishes it for the node.
func TestDRADeclaredDevicesGetANode(t *testing.T) {
	e := env.NewAWS(t)
	newDRAEnv(e, false)
	e.ApplyExample("ec2nodeclass.yaml")
	np := env.NodePool("fpga",
		karpv1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelInstanceFamily, Operator: corev1.NodeSelectorOpIn, Values: []string{"c6i", "m6i"}},
		karpv1.NodeSelectorRequirementWithMinValues{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}})
	np.Annotations = map[string]string{cloud.DevicesAnnotation: `
- instanceTypes: ["c6i.*"]
  driver: fpga.example.com
  devices: 1
  namePrefix: fpga
  attributes: {model: VU9P}
- instanceTypes: ["m6i.*"]
  driver: fpga.example.com
  devices: 1
  namePrefix: fpga
  attributes: {model: KU5P}
`}
	e.CreateNodePool(np)
	create(e.Env, &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: fpgaDriver},
		Spec:       resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "fpga.example.com"`}}}},
	})
	create(e.Env, claimTemplate("vu9p", resourcev1.DeviceRequest{Name: "fpga", Exactly: &resourcev1.ExactDeviceRequest{
		DeviceClassName: fpgaDriver, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1,
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.attributes["fpga.example.com"].model == "VU9P"`}}},
	}}))
	create(e.Env, gpuDeployment("hls", 2, corev1.PodResourceClaim{Name: "fpga", ResourceClaimTemplateName: ptr.To("vu9p")}))

	pods := e.WaitRunning("app=hls", 2, 3*time.Minute)
	nodes := map[string]bool{}
	e.WaitFor("each pod's claim allocated its node's FPGA", 30*time.Second, func() (bool, string) {
		for i := range pods {
			p, err := e.Cluster.Kube.CoreV1().Pods("default").Get(e.Ctx, pods[i].Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			c, err := podClaim(e.Env, p, "fpga")
			if err != nil || c.Status.Allocation == nil {
				return false, fmt.Sprintf("pod %s: claim not allocated (%v)", p.Name, err)
			}
			r := c.Status.Allocation.Devices.Results
			if len(r) != 1 || r[0].Driver != fpgaDriver || r[0].Pool != p.Spec.NodeName || r[0].Device != "fpga-0" {
				return false, fmt.Sprintf("pod %s on %s: claim %s allocated %+v", p.Name, p.Spec.NodeName, c.Name, r)
			}
			nodes[p.Spec.NodeName] = true
		}
		return true, ""
	})
	if len(nodes) != 2 {
		t.Errorf("the pods run on %d nodes, want 2: each node has one FPGA", len(nodes))
	}
	for name := range nodes {
		node, err := e.Cluster.Kube.CoreV1().Nodes().Get(e.Ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if typ := node.Labels[corev1.LabelInstanceTypeStable]; !strings.HasPrefix(typ, "c6i.") {
			t.Errorf("node %s is a %s, whose declared FPGA is not a VU9P", name, typ)
		}
	}
}
