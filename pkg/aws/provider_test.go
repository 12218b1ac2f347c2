package aws_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

const cluster = "tailor"

// env is a provider wired to an emulator, with node classes the test can change.
type env struct {
	emu      *emulator.Emulator
	provider *tailoraws.Provider
	clock    *clocktesting.FakeClock
	launches chan emulator.Launch

	mu      sync.Mutex
	classes map[string]*awsv1.EC2NodeClass
	// gets counts the reads of a class through Options.NodeClasses (the API server's GETs).
	gets atomic.Int64
}

func newEnv(t *testing.T, emuOpts emulator.Options) *env {
	t.Helper()
	e := &env{clock: clocktesting.NewFakeClock(time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)),
		classes: map[string]*awsv1.EC2NodeClass{}, launches: make(chan emulator.Launch, 16)}
	emuOpts.Clock, emuOpts.ClusterName = e.clock, cluster
	emuOpts.OnLaunch = func(l emulator.Launch) { e.launches <- l }
	e.emu = emulator.Start(emuOpts)
	t.Cleanup(e.emu.Close)
	e.setClass(defaultClass())
	e.provider = e.newProvider(t, cluster)
	return e
}

func (e *env) newProvider(t *testing.T, clusterName string) *tailoraws.Provider {
	t.Helper()
	p, err := tailoraws.New(context.Background(), tailoraws.Options{
		ClusterName: clusterName, ClusterEndpoint: "https://api.tailor.internal", ClusterCABundle: "Q0E=", ClusterDNS: []string{"10.100.0.10"},
		Endpoint: e.emu.URL(), Region: e.emu.Region(), Clock: e.clock, RetryMaxAttempts: 3, RetryMaxBackoff: 100 * time.Millisecond,
		NodeClasses: func(_ context.Context, name string) (*awsv1.EC2NodeClass, error) {
			e.gets.Add(1)
			e.mu.Lock()
			defer e.mu.Unlock()
			nc, ok := e.classes[name]
			if !ok {
				return nil, fmt.Errorf("ec2nodeclass %q not found", name)
			}
			return nc.DeepCopy(), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *env) setClass(nc *awsv1.EC2NodeClass) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.classes[nc.Name] = nc.DeepCopy()
}

func (e *env) class(name string) *awsv1.EC2NodeClass {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.classes[name].DeepCopy()
}

func defaultClass() *awsv1.EC2NodeClass {
	profile := "tailor-node"
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{emulator.DiscoveryTag: cluster}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{emulator.DiscoveryTag: cluster}}},
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			InstanceProfile:            &profile,
			Tags:                       map[string]string{"team": "platform"},
		},
	}
}

func pool() *karpv1.NodePool {
	p := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	p.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	return p
}

// claim asks for one of the types with the capacity type.
func claim(name string, capacityType string, instanceTypes ...string) *karpv1.NodeClaim {
	c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name),
		Labels: map[string]string{karpv1.NodePoolLabelKey: "default", "team": "a"}}}
	c.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	c.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "a", Effect: corev1.TaintEffectNoSchedule}}
	c.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{capacityType}},
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: instanceTypes},
		{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"default"}},
		{Key: "karpenter.k8s.aws/instance-cpu", Operator: karpv1.NodeSelectorOpGte, Values: []string{"2"}},
	}
	return c
}

func offering(t *testing.T, p *tailoraws.Provider, key cloud.OfferingKey) cloud.Offering {
	t.Helper()
	types, err := p.InstanceTypes(context.Background(), pool())
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range types {
		if it.Name != key.InstanceType {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == key.Zone && o.CapacityType == key.CapacityType {
				return o
			}
		}
	}
	t.Fatalf("no offering %+v", key)
	return cloud.Offering{}
}

// TestCreate launches on the cheapest offering and hands back the claim as launched; the node
// the instance registers agrees with it.
func TestCreate(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	ctx := context.Background()
	got, err := e.provider.Create(ctx, claim("a", karpv1.CapacityTypeOnDemand, "m5.large", "c5.large"))
	if err != nil {
		t.Fatal(err)
	}
	insts := e.emu.Instances()
	if len(insts) != 1 {
		t.Fatalf("%d instances, want 1", len(insts))
	}
	inst := insts[0]
	if inst.InstanceType != "c5.large" || got.Status.ProviderID != "aws:///"+inst.Zone+"/"+inst.ID {
		t.Errorf("launched %s as %s, want the cheaper c5.large", inst.InstanceType, got.Status.ProviderID)
	}
	for k, want := range map[string]string{corev1.LabelInstanceTypeStable: "c5.large", karpv1.CapacityTypeLabelKey: "on-demand",
		corev1.LabelTopologyZone: inst.Zone, awsv1.LabelTopologyZoneID: "usw2-az1", awsv1.LabelInstanceFamily: "c5", "team": "a", awsv1.LabelNodeClass: "default"} {
		if got.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, got.Labels[k], want)
		}
	}
	if got.Annotations[awsv1.AnnotationEC2NodeClassHash] != tailoraws.NodeClassHash(e.class("default")) || got.Status.ImageID != inst.ImageID {
		t.Errorf("annotations %v, image %s (instance runs %s)", got.Annotations, got.Status.ImageID, inst.ImageID)
	}
	for _, tags := range []map[string]string{inst.Tags, inst.VolumeTags} {
		for k, want := range map[string]string{"kubernetes.io/cluster/" + cluster: "owned", awsv1.TagKeyNodePool: "default",
			awsv1.TagKeyNodeClaim: "a", awsv1.TagKeyNodeClass: "default", awsv1.TagKeyEKSClusterName: cluster, "team": "platform"} {
			if tags[k] != want {
				t.Errorf("tag %s = %q, want %q", k, tags[k], want)
			}
		}
	}
	checkNode(t, got, <-e.launches)
}

// checkNode checks that the node the instance registers is the one the claim promised: its
// labels, taints and allocatable.
func checkNode(t *testing.T, got *karpv1.NodeClaim, l emulator.Launch) {
	t.Helper()
	node := emulator.NodeFor(l)
	if l.BootstrapErr != nil || node.Labels["team"] != "a" || node.Labels[karpv1.NodePoolLabelKey] != "default" {
		t.Errorf("node registered as %v (bootstrap error %v)", node.Labels, l.BootstrapErr)
	}
	if got.Status.NodeName != node.Name {
		t.Errorf("claim expects node %q, the instance registers %q", got.Status.NodeName, node.Name)
	}
	if len(node.Spec.Taints) != 2 || node.Spec.Taints[1].Key != karpv1.UnregisteredTaintKey {
		t.Errorf("node taints %v, want the claim's and karpenter.sh/unregistered", node.Spec.Taints)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage} {
		if want, have := got.Status.Allocatable[r], node.Status.Allocatable[r]; want.Cmp(have) != 0 {
			t.Errorf("allocatable %s: claim promised %s, kubelet reports %s", r, want.String(), have.String())
		}
	}
}

// TestAMIFamiliesBoot launches with each family's alias; the emulated node reads the family's
// user data format and registers as promised.
func TestAMIFamiliesBoot(t *testing.T) {
	for _, alias := range []string{"al2023@latest", "bottlerocket@latest", "al2@latest", "al2023@v20240625", "bottlerocket@v1.20.3", "al2@v20240625"} {
		t.Run(alias, func(t *testing.T) {
			e := newEnv(t, emulator.Options{})
			nc := defaultClass()
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: alias}}
			e.setClass(nc)
			got, err := e.provider.Create(context.Background(), claim("a", karpv1.CapacityTypeOnDemand, "m6g.xlarge"))
			if err != nil {
				t.Fatal(err)
			}
			checkNode(t, got, <-e.launches)
		})
	}
}

func TestCreateIsIdempotent(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	ctx := context.Background()
	first, err := e.provider.Create(ctx, claim("a", karpv1.CapacityTypeSpot, "m5.large", "m6i.large"))
	if err != nil {
		t.Fatal(err)
	}
	// A second provider stands for Tailor after a restart: no memory of the first launch.
	second, err := e.newProvider(t, cluster).Create(ctx, claim("a", karpv1.CapacityTypeSpot, "m5.large", "m6i.large"))
	if err != nil {
		t.Fatal(err)
	}
	if first.Status.ProviderID != second.Status.ProviderID || len(e.emu.Instances()) != 1 {
		t.Fatalf("same UID launched twice: %s, %s, %d instances", first.Status.ProviderID, second.Status.ProviderID, len(e.emu.Instances()))
	}
	if first.Labels[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeSpot {
		t.Errorf("capacity type %q, want spot", first.Labels[karpv1.CapacityTypeLabelKey])
	}
}

// TestInsufficientCapacityFallback: the cheapest offering is short, so the claim launches on
// the next one, and the short one is unavailable for three minutes of the injected clock.
func TestInsufficientCapacityFallback(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	ctx := context.Background()
	short := cloud.OfferingKey{InstanceType: "c5.large", Zone: fake.ZoneA, CapacityType: karpv1.CapacityTypeOnDemand}
	e.emu.InjectInsufficientCapacity(short)
	got, err := e.provider.Create(ctx, claim("a", karpv1.CapacityTypeOnDemand, "c5.large", "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[corev1.LabelInstanceTypeStable] != "c5.large" || got.Labels[corev1.LabelTopologyZone] != fake.ZoneB {
		t.Errorf("launched %s in %s, want c5.large in the next zone", got.Labels[corev1.LabelInstanceTypeStable], got.Labels[corev1.LabelTopologyZone])
	}
	for _, step := range []struct {
		advance   time.Duration
		available bool
	}{{0, false}, {2 * time.Minute, false}, {61 * time.Second, true}} {
		e.clock.Step(step.advance)
		if o := offering(t, e.provider, short); o.Available != step.available {
			t.Errorf("after +%s: available = %v, want %v", step.advance, o.Available, step.available)
		}
	}
}

func TestInsufficientCapacityEverywhere(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	var keys []cloud.OfferingKey
	for _, z := range fake.Zones() {
		keys = append(keys, cloud.OfferingKey{InstanceType: "c5.large", Zone: z, CapacityType: karpv1.CapacityTypeOnDemand})
	}
	e.emu.InjectInsufficientCapacity(keys...)
	_, err := e.provider.Create(context.Background(), claim("a", karpv1.CapacityTypeOnDemand, "c5.large"))
	if !cloud.IsInsufficientCapacity(err) || len(e.emu.Instances()) != 0 {
		t.Fatalf("err = %v, want InsufficientCapacityError and no instance", err)
	}
	// The next attempt knows before asking EC2.
	calls := e.emu.Calls("CreateFleet")
	if _, err := e.provider.Create(context.Background(), claim("b", karpv1.CapacityTypeOnDemand, "c5.large")); !cloud.IsInsufficientCapacity(err) || e.emu.Calls("CreateFleet") != calls {
		t.Errorf("second attempt: %v after %d more CreateFleet calls", err, e.emu.Calls("CreateFleet")-calls)
	}
}

func TestThrottledCreateIsRetried(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	e.emu.Throttle("CreateFleet", 2)
	if _, err := e.provider.Create(context.Background(), claim("a", karpv1.CapacityTypeOnDemand, "m5.large")); err != nil {
		t.Fatal(err)
	}
	if got := e.emu.Calls("CreateFleet"); got != 3 || len(e.emu.Instances()) != 1 {
		t.Errorf("%d CreateFleet calls and %d instances, want 3 and 1", got, len(e.emu.Instances()))
	}
}

func TestDeleteGetList(t *testing.T) {
	e := newEnv(t, emulator.Options{MaxPageSize: 1})
	ctx := context.Background()
	other := e.newProvider(t, "other-cluster")
	mine, err := e.provider.Create(ctx, claim("mine", karpv1.CapacityTypeOnDemand, "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.provider.Create(ctx, claim("mine-too", karpv1.CapacityTypeOnDemand, "m5.large")); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create(ctx, claim("theirs", karpv1.CapacityTypeOnDemand, "m5.large")); err != nil {
		t.Fatal(err)
	}
	listed, err := e.provider.List(ctx)
	if err != nil || len(listed) != 2 {
		t.Fatalf("List = %d claims, %v; want this cluster's 2", len(listed), err)
	}
	for _, c := range listed {
		if c.Name != "mine" && c.Name != "mine-too" || c.Labels[karpv1.NodePoolLabelKey] != "default" {
			t.Errorf("listed %s %v", c.Name, c.Labels)
		}
	}
	if got, err := e.provider.Get(ctx, mine.Status.ProviderID); err != nil || got.Name != "mine" {
		t.Fatalf("Get = %v, %v", got, err)
	}
	for i, want := range []bool{false, true} {
		if err := e.provider.Delete(ctx, mine); cloud.IsNotFound(err) != want || (!want && err != nil) {
			t.Errorf("Delete #%d = %v, want NotFound %v", i+1, err, want)
		}
	}
	if _, err := e.provider.Get(ctx, mine.Status.ProviderID); !cloud.IsNotFound(err) {
		t.Errorf("Get after delete = %v, want NotFound", err)
	}
	// A claim whose status never recorded its instance is found by its tag.
	lost := claim("mine-too", karpv1.CapacityTypeOnDemand, "m5.large")
	if err := e.provider.Delete(ctx, lost); err != nil {
		t.Errorf("Delete without provider ID = %v", err)
	}
}

// TestCustomUserDataBoots launches with user data in the shapes Karpenter's docs show, among them
// its AL2023 example (MIME, boundary "//", a NodeConfig part and a shell part, and no closing
// "--"), through the real SDK and the emulator; the emulated node reads the merged user data and
// registers as promised.
func TestCustomUserDataBoots(t *testing.T) {
	const al2023Example = "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n" +
		"--//\nContent-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n" +
		"  kubelet:\n    config:\n      shutdownGracePeriod: 30s\n\n" +
		"--//\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\n#!/bin/bash\necho \"custom AL2023 step\"\n--//\n"
	for _, tc := range []struct{ name, alias, userData string }{
		{"al2023 MIME example", "al2023@latest", al2023Example},
		{"al2023 MIME example with CRLF", "al2023@v20240625", strings.ReplaceAll(al2023Example, "\n", "\r\n")},
		{"al2023 NodeConfig alone", "al2023@latest", "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      shutdownGracePeriod: 30s\n"},
		{"al2 shell script", "al2@latest", "#!/bin/bash\necho custom AL2 step\n"},
		{"bottlerocket settings", "bottlerocket@v1.20.3", "[settings.kubernetes]\nkube-api-qps = 30\n[settings.kernel.sysctl]\n\"user.max_user_namespaces\" = \"16384\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, emulator.Options{})
			nc := defaultClass()
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: tc.alias}}
			nc.Spec.UserData = &tc.userData
			e.setClass(nc)
			got, err := e.provider.Create(context.Background(), claim("a", karpv1.CapacityTypeOnDemand, "m6g.xlarge"))
			if err != nil {
				t.Fatal(err)
			}
			l := <-e.launches
			checkNode(t, got, l)
			var ud string
			for _, lt := range e.emu.LaunchTemplates() {
				ud += lt.UserData
			}
			for _, want := range []string{"custom AL2023 step", "shutdownGracePeriod", "custom AL2 step", "kube-api-qps = 30"} {
				if strings.Contains(tc.userData, want) && !strings.Contains(ud, want) {
					t.Errorf("the launch template's user data lost %q:\n%s", want, ud)
				}
			}
		})
	}
}

// TestLaunchErrorsClassified: what retrying cannot fix comes back as a PermanentLaunchError with
// EC2's code and message; a capacity shortage does not.
func TestLaunchErrorsClassified(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	ctx := context.Background()
	e.emu.Deny("CreateFleet")
	_, err := e.provider.Create(ctx, claim("a", karpv1.CapacityTypeOnDemand, "m5.large"))
	pe := cloud.AsPermanentLaunch(err)
	if pe == nil || pe.Code != "UnauthorizedOperation" || !strings.Contains(err.Error(), "not authorized") {
		t.Fatalf("denied CreateFleet: %v (permanent %+v), want a permanent UnauthorizedOperation with EC2's message", err, pe)
	}
	e.emu.Allow("CreateFleet")
	for _, z := range []string{fake.ZoneA, fake.ZoneB, fake.ZoneC} {
		e.emu.InjectInsufficientCapacity(cloud.OfferingKey{InstanceType: "m5.large", Zone: z, CapacityType: karpv1.CapacityTypeOnDemand})
	}
	_, err = e.provider.Create(ctx, claim("b", karpv1.CapacityTypeOnDemand, "m5.large"))
	if err == nil || cloud.AsPermanentLaunch(err) != nil || !cloud.IsInsufficientCapacity(err) {
		t.Fatalf("capacity shortage: %v, want an InsufficientCapacityError that is not permanent", err)
	}
}
