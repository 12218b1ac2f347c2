package aws

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// shapeCase is one folder of testdata/karpenter-shapes: a NodePool, an EC2NodeClass and
// workloads in the shape of one of Karpenter's documented examples.
type shapeCase struct {
	name string
	// pods is how many pods the case's workloads make.
	pods int
	// ready is whether every pod must run; when false, done says when the case has settled,
	// and must say so, with the same count of running pods, for 2 s in a row.
	ready bool
	done  func(e *env.AWS, s *shapeState) (bool, string)
	// check asserts where the pods run once the case has settled.
	check func(t *testing.T, e *env.AWS, s *shapeState)
}

// The emulated account and the images of our own that the custom-AMI cases select by ID.
const (
	shapesCluster = "prod-east"
	shapesRegion  = "us-east-1"
	al2AMD64      = "ami-0c0ffee0000000001"
	al2ARM64      = "ami-0c0ffee0000000002"
	customAMD64   = "ami-0c0ffee0000000003"
	customARM64   = "ami-0c0ffee0000000004"
)

var shapeCases = []shapeCase{
	{name: "general-purpose", pods: 5, ready: true, check: func(t *testing.T, e *env.AWS, s *shapeState) {
		s.eachNode(t, "amd64, on-demand, c/m/r of generation 3+ in us-east-1", func(n corev1.Node) bool {
			return n.Labels[corev1.LabelArchStable] == "amd64" && n.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeOnDemand &&
				slices.Contains([]string{"c", "m", "r"}, n.Labels[awsv1.LabelInstanceCategory]) && labelInt(n, awsv1.LabelInstanceGeneration) > 2 &&
				strings.HasPrefix(n.Labels[corev1.LabelTopologyZone], shapesRegion) && n.Labels[corev1.LabelTopologyRegion] == shapesRegion
		})
		if len(s.class.Status.Subnets) != 3 || !strings.HasPrefix(s.class.Status.Subnets[0].ZoneID, "use1-az") {
			t.Errorf("the class resolved subnets %+v, want the 3 of us-east-1", s.class.Status.Subnets)
		}
	}},
	{name: "spot", pods: 3, ready: true, check: func(t *testing.T, e *env.AWS, s *shapeState) {
		s.eachNode(t, "spot", func(n corev1.Node) bool { return n.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeSpot })
	}},
	// Settled once every pod runs or was told why not: the ReplicaSet makes its pods in growing
	// batches, and a first small claim may run its pod while the rest are still being planned.
	{name: "cpu-limit", pods: 30, done: func(e *env.AWS, s *shapeState) (bool, string) {
		told, err := s.toldUnplaceable(e)
		if err != nil {
			return false, err.Error()
		}
		return s.running() > 0 && s.running()+told == 30, fmt.Sprintf("%d of 30 running, %d told why not", s.running(), told)
	}, check: func(t *testing.T, e *env.AWS, s *shapeState) {
		cpu := resource.Quantity{}
		for _, c := range s.claims {
			cpu.Add(*c.Status.Capacity.Cpu())
		}
		if cpu.Cmp(resource.MustParse("100")) > 0 {
			t.Errorf("the NodePool's claims hold %s vCPUs, over its limit of 100", cpu.String())
		}
		// 120 vCPUs are asked for: whatever the shapes, some pods stay pending, and the pool
		// launches until the limit leaves no room for another 4-vCPU pod.
		if s.running() == 30 || cpu.Cmp(resource.MustParse("64")) < 0 {
			t.Errorf("%d of 30 pods run on %s vCPUs", s.running(), cpu.String())
		}
	}},
	{name: "large-instances", pods: 4, ready: true, check: func(t *testing.T, e *env.AWS, s *shapeState) {
		s.eachNode(t, "at least 4 vCPUs and 8 GiB", func(n corev1.Node) bool {
			return labelInt(n, awsv1.LabelInstanceCPU) >= 4 && labelInt(n, awsv1.LabelInstanceMemory) >= 8192
		})
	}},
	{name: "multiple-arch", pods: 6, ready: true, check: func(t *testing.T, e *env.AWS, s *shapeState) {
		for app, arch := range map[string]string{"arm64": "arm64", "amd64": "amd64", "prefer-arm": "arm64"} {
			for _, p := range s.podsOf(app) {
				n := s.nodeOf(p)
				if n.Labels[corev1.LabelArchStable] == arch {
					continue
				}
				// A preference is not a requirement: new capacity for prefer-arm pods is arm64,
				// but room left on a node launched for others, an amd64 one included, takes them
				// as the scheduler would take them there by its own scores (the plan counts a
				// pod on the room of nodes in flight as on ready ones, preferences aside; a pod
				// that comes after the first plan may find an arm64 claim full). Tailor must
				// never launch amd64 for them.
				if app == "prefer-arm" {
					launched, err := s.launchedFor(e, p)
					if err != nil {
						t.Error(err)
					}
					if !launched {
						continue
					}
				}
				t.Errorf("%s pod %s runs on %s node %s", app, p.Name, n.Labels[corev1.LabelArchStable], n.Name)
			}
		}
		// The check above reads the provisioner's Nominated events: they must be there, or it
		// could not fail. The arm64 pods need new capacity of their own.
		told := 0
		for _, p := range s.podsOf("arm64") {
			if launched, err := s.launchedFor(e, p); err == nil && launched {
				told++
			}
		}
		if told == 0 {
			t.Errorf("no arm64 pod was told the NodeClaim launched for it (no Nominated event)")
		}
		s.eachNode(t, "from the NodePool of its architecture", func(n corev1.Node) bool {
			return n.Labels[karpv1.NodePoolLabelKey] == "multiple-arch-"+n.Labels[corev1.LabelArchStable]
		})
	}},
	{name: "min-values-family", pods: 3, ready: true, check: func(t *testing.T, e *env.AWS, s *shapeState) {
		s.eachNode(t, "spot", func(n corev1.Node) bool { return n.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeSpot })
		for _, c := range s.claims {
			types, _ := claimValues(&c, corev1.LabelInstanceTypeStable)
			if families := distinct(types, familyOf); families < 5 {
				t.Errorf("NodeClaim %s may launch as %d families (%v), the NodePool asks for 5", c.Name, families, types)
			}
		}
	}},
	{name: "min-values-multiple-keys", pods: 3, ready: true,
		check: func(t *testing.T, e *env.AWS, s *shapeState) {
			for _, c := range s.claims {
				types, _ := claimValues(&c, corev1.LabelInstanceTypeStable)
				categories := distinct(types, func(it string) string { return it[:1] })
				if len(types) < 2 || distinct(types, familyOf) < 5 || categories < 2 {
					t.Errorf("NodeClaim %s may launch as %v: want 2+ types, 5+ families, 2+ categories", c.Name, types)
				}
			}
		}},
	{name: "al2-custom-ami", pods: 2, ready: true, check: func(t *testing.T, e *env.AWS, s *shapeState) {
		if amis := classAMIs(s.class); len(amis) != 2 || amis[al2AMD64] == "" || amis[al2ARM64] == "" {
			t.Errorf("the class resolved images %v, want the two selected by ID", amis)
		}
		for _, c := range s.claims {
			if c.Status.ImageID != al2AMD64 {
				t.Errorf("NodeClaim %s runs image %s, want the amd64 one of ours, %s", c.Name, c.Status.ImageID, al2AMD64)
			}
		}
	}},
	{name: "al2023-custom-userdata", pods: 2, ready: true,
		check: func(t *testing.T, e *env.AWS, s *shapeState) {
			s.eachNode(t, "amd64", func(n corev1.Node) bool { return n.Labels[corev1.LabelArchStable] == "amd64" })
		}},
	{name: "bottlerocket", pods: 2, ready: true, check: func(t *testing.T, e *env.AWS, s *shapeState) {
		// The label comes from the class's TOML, merged into the user data Tailor renders.
		s.eachNode(t, "labelled by its Bottlerocket settings", func(n corev1.Node) bool { return n.Labels["team"] == "platform" })
		amis := classAMIs(s.class)
		for _, c := range s.claims {
			if !strings.HasPrefix(amis[c.Status.ImageID], "bottlerocket-") {
				t.Errorf("NodeClaim %s runs image %s (%s), not Bottlerocket", c.Name, c.Status.ImageID, amis[c.Status.ImageID])
			}
		}
	}},
	{name: "custom-family", pods: 2, ready: true, check: func(t *testing.T, e *env.AWS, s *shapeState) {
		// Custom user data reaches the instance untouched: its bootstrap line labels the node.
		s.eachNode(t, "labelled by its own bootstrap", func(n corev1.Node) bool { return n.Labels["foo"] == "bar" })
		for _, c := range s.claims {
			if c.Status.ImageID != customAMD64 {
				t.Errorf("NodeClaim %s runs image %s, want %s", c.Name, c.Status.ImageID, customAMD64)
			}
		}
	}},
	{name: "multiple-ebs", pods: 2, ready: true, check: func(t *testing.T, e *env.AWS, s *shapeState) {
		// Ephemeral storage is the root volume's, /dev/xvda for AL2023, not the data volumes'.
		s.eachNode(t, "given the 20 GiB root volume as ephemeral storage", func(n corev1.Node) bool {
			return n.Status.Capacity.StorageEphemeral().Cmp(resource.MustParse("20Gi")) == 0
		})
	}},
	{name: "instance-store", pods: 2, ready: true, check: checkInstanceStore},
	{name: "accelerators", pods: 3, ready: true, check: checkAccelerators},
	{name: "efa", pods: 1, ready: true, check: checkEFA},
	{name: "gpu", pods: 1, ready: true, check: func(t *testing.T, e *env.AWS, s *shapeState) {
		s.eachNode(t, "an NVIDIA GPU node, tainted for GPU pods", func(n corev1.Node) bool {
			gpus := n.Status.Allocatable[fake.ResourceNvidiaGPU]
			return labelInt(n, awsv1.LabelInstanceGPUCount) >= 1 && n.Labels[awsv1.LabelInstanceGPUManufacturer] == "nvidia" &&
				gpus.Value() >= 1 && slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "nvidia.com/gpu" })
		})
	}},
	// Slow today (about 35 s): Tailor nominates two pods to each zone's new node, and the
	// scheduler, which adds only the evaluated node's nominated pods to the spread counts, sees a
	// skew of 2 on every node and refuses all six until the nominations lapse (20 s) and the next
	// resync places them.
	{name: "spread-zone", pods: 6, ready: true, check: func(t *testing.T, e *env.AWS, s *shapeState) {
		if c := s.counts(corev1.LabelTopologyZone, "us-east-1a", "us-east-1b", "us-east-1c"); len(c) != 3 || skew(c) > 1 {
			t.Errorf("pods per zone %v: want the 3 us-east-1 zones, skew at most 1", c)
		}
	}},
	{name: "spread-hostname", pods: 4, ready: true, check: func(t *testing.T, e *env.AWS, s *shapeState) {
		nodes := make([]string, 0, len(s.nodes))
		for n := range s.nodes {
			nodes = append(nodes, n)
		}
		if c := s.counts(corev1.LabelHostname, nodes...); len(c) < 2 || skew(c) > 1 {
			t.Errorf("pods per node %v: want skew at most 1", c)
		}
	}},
	{name: "spread-hostname-zone", pods: 10, ready: true, check: func(t *testing.T, e *env.AWS, s *shapeState) {
		nodes := make([]string, 0, len(s.nodes))
		for n := range s.nodes {
			nodes = append(nodes, n)
		}
		if c := s.counts(corev1.LabelHostname, nodes...); skew(c) > 2 {
			t.Errorf("pods per node %v: want skew at most 2", c)
		}
		// kube-scheduler counts the zones that have nodes the pods may use; a zone with none is
		// no domain (Karpenter's own accounting would count the NodePool's empty zones too).
		if c := s.counts(corev1.LabelTopologyZone); skew(c) > 5 {
			t.Errorf("pods per zone %v: want skew at most 5", c)
		}
	}},
	{name: "disruption-budgets", pods: 10, ready: true, check: func(t *testing.T, e *env.AWS, s *shapeState) {
		s.eachNode(t, "amd64", func(n corev1.Node) bool { return n.Labels[corev1.LabelArchStable] == "amd64" })
		waitShape(t, e, "the PodDisruptionBudget to allow 2 disruptions (80% of 10 must stay)", 30*time.Second, func() (bool, string) {
			pdb, err := e.Cluster.Kube.PolicyV1().PodDisruptionBudgets(s.name).Get(e.Ctx, "pdb", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return pdb.Status.DisruptionsAllowed == 2, fmt.Sprintf("status %+v", pdb.Status)
		})
		np, err := e.Cluster.Tailor.KarpenterV1().NodePools().Get(e.Ctx, s.name, metav1.GetOptions{})
		if err != nil || len(np.Spec.Disruption.Budgets) != 3 {
			t.Errorf("NodePool budgets: %v, %+v", err, np)
		}
	}},
	// Windows Server 2022 nodes from the windows2022@latest alias, labelled with their build.
	{name: "windows-2022", pods: 1, ready: true, check: func(t *testing.T, e *env.AWS, s *shapeState) {
		s.eachNode(t, "Windows Server 2022", func(n corev1.Node) bool {
			return n.Labels[corev1.LabelOSStable] == "windows" && n.Labels[corev1.LabelWindowsBuild] == awsv1.Windows2022Build &&
				n.Status.NodeInfo.OperatingSystem == "windows"
		})
		for _, c := range s.claims {
			if c.Labels[corev1.LabelOSStable] != "windows" || c.Labels[corev1.LabelWindowsBuild] != awsv1.Windows2022Build {
				t.Errorf("NodeClaim %s labels %v", c.Name, c.Labels)
			}
		}
	}},
	// Last: it moves Tailor's clock past the other cases' checks.
	{name: "max-node-lifetime", pods: 2, ready: true, check: checkMaxNodeLifetime},
}

// shapeWait bounds each wait of TestKarpenterShapes. The emulator serves EC2's catalog (1,345
// types in us-east-1, three times the simulated one), so a batch of the twenty NodePools takes
// Tailor's planner longer; on a loaded machine the later cases waited over a minute.
const shapeWait = 3 * time.Minute

// TestKarpenterShapes applies every case of testdata/karpenter-shapes at once to one cluster on
// the AWS provider and the emulator, set up as the account of cluster prod-east in us-east-1 that
// the manifests were written for, and checks, case by case, that the pods run where their
// constraints say.
func TestKarpenterShapes(t *testing.T) {
	e := env.NewAWSFor(t, shapesCluster, shapesRegion)
	created := e.Clock.Now().Add(-time.Hour)
	for _, img := range []emulator.Image{
		{ID: al2AMD64, Name: "my-eks-al2-x86_64", Architecture: "x86_64"},
		{ID: al2ARM64, Name: "my-eks-al2-arm64", Architecture: "arm64"},
		{ID: customAMD64, Name: "my-hardened-x86_64", Architecture: "x86_64"},
		{ID: customARM64, Name: "my-hardened-arm64", Architecture: "arm64"},
	} {
		img.OwnerID, img.Created = emulator.AccountID, created
		e.Emu.AddImage(img)
	}
	var dirs []string
	for _, c := range shapeCases {
		dirs = append(dirs, filepath.Join("testdata", "karpenter-shapes", c.name))
	}
	if err := sandbox.ApplyFiles(e.Ctx, e.Cluster.Config, dirs, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range shapeCases {
		t.Run(c.name, func(t *testing.T) {
			var s *shapeState
			streak, lastRunning := 0, -1
			waitShape(t, e, c.name+" to settle", shapeWait, func() (bool, string) {
				var err error
				if s, err = readShape(e, c.name); err != nil {
					return false, err.Error()
				}
				ok, why := s.settled(c.pods)
				if ok && c.ready {
					ok, why = s.running() == c.pods, fmt.Sprintf("%d of %d pods running%s", s.running(), c.pods, s.stuck())
				}
				if ok && c.done != nil {
					ok, why = c.done(e, s)
					if !ok || s.running() != lastRunning {
						streak, lastRunning = 0, s.running()
					}
					if streak++; streak < 10 {
						ok = false
					}
				}
				return ok, why
			})
			if c.ready {
				if ready := s.class.GetCondition(awsv1.ConditionTypeReady); ready == nil || ready.Status != metav1.ConditionTrue {
					t.Errorf("EC2NodeClass %s is not Ready: %+v", c.name, ready)
				}
			}
			c.check(t, e, s)
		})
	}
}

// checkMaxNodeLifetime: the claims carry the NodePool's expireAfter and terminationGracePeriod;
// once 7 days have passed on Tailor's clock, every node of the case is replaced and the pods run
// on new ones. The other cases' NodePools keep Karpenter's default of 30 days.
func checkMaxNodeLifetime(t *testing.T, e *env.AWS, s *shapeState) {
	old := map[string]bool{}
	for _, c := range s.claims {
		old[c.Name] = true
		if c.Spec.ExpireAfter.Duration == nil || *c.Spec.ExpireAfter.Duration != 168*time.Hour ||
			c.Spec.TerminationGracePeriod == nil || c.Spec.TerminationGracePeriod.Duration != 24*time.Hour {
			t.Errorf("NodeClaim %s: expireAfter %v, terminationGracePeriod %v", c.Name, c.Spec.ExpireAfter, c.Spec.TerminationGracePeriod)
		}
	}
	e.Clock.Step(169 * time.Hour)
	waitShape(t, e, "the expired nodes to be replaced", shapeWait, func() (bool, string) {
		now, err := readShape(e, s.name)
		if err != nil {
			return false, err.Error()
		}
		for _, c := range now.claims {
			if old[c.Name] {
				return false, fmt.Sprintf("NodeClaim %s is still there", c.Name)
			}
		}
		return now.running() == 2, fmt.Sprintf("%d of 2 pods running on %d new claims", now.running(), len(now.claims))
	})
}
