package fake

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func req(key string, op corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
}

// newClaim looks like what the planner writes: nodepool label and requirement, a node class.
func newClaim(name string, requests corev1.ResourceList, reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			UID:    types.UID(name + "-uid"),
			Labels: map[string]string{karpv1.NodePoolLabelKey: "default", "team": "a"},
		},
		Spec: karpv1.NodeClaimSpec{
			Requirements: append([]karpv1.NodeSelectorRequirementWithMinValues{
				req(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, "default"),
			}, reqs...),
			Resources:    karpv1.ResourceRequirements{Requests: requests},
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		},
	}
}

func newProvider() *Provider {
	return New(Options{Clock: clocktesting.NewFakeClock(epoch), ClusterName: "test"})
}

func TestCreatePicksCheapestCompatibleOffering(t *testing.T) {
	// Expected values are read off the SIMULATED price table; a price change that moves them
	// should be a deliberate one.
	for _, tc := range []struct {
		name     string
		reqs     []karpv1.NodeSelectorRequirementWithMinValues
		requests corev1.ResourceList
		want     cloud.OfferingKey
		price    float64
	}{
		{"anything", nil, nil,
			cloud.OfferingKey{InstanceType: "t4g.large", Zone: ZoneC, CapacityType: karpv1.CapacityTypeSpot}, 0.0209},
		{"arm64", []karpv1.NodeSelectorRequirementWithMinValues{req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64")}, nil,
			cloud.OfferingKey{InstanceType: "t4g.large", Zone: ZoneC, CapacityType: karpv1.CapacityTypeSpot}, 0.0209},
		{"amd64", []karpv1.NodeSelectorRequirementWithMinValues{req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64")}, nil,
			cloud.OfferingKey{InstanceType: "t3a.large", Zone: ZoneC, CapacityType: karpv1.CapacityTypeSpot}, 0.0251},
		{"on-demand only", []karpv1.NodeSelectorRequirementWithMinValues{req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand)}, nil,
			cloud.OfferingKey{InstanceType: "t4g.large", Zone: ZoneC, CapacityType: karpv1.CapacityTypeOnDemand}, 0.0664},
		{"zone b", []karpv1.NodeSelectorRequirementWithMinValues{req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, ZoneB)}, nil,
			cloud.OfferingKey{InstanceType: "t3a.large", Zone: ZoneB, CapacityType: karpv1.CapacityTypeSpot}, 0.0272},
		{"category r", []karpv1.NodeSelectorRequirementWithMinValues{req(awsv1.LabelInstanceCategory, corev1.NodeSelectorOpIn, "r")}, nil,
			cloud.OfferingKey{InstanceType: "r7g.large", Zone: ZoneB, CapacityType: karpv1.CapacityTypeSpot}, 0.0343},
		{"generation Gt 6", []karpv1.NodeSelectorRequirementWithMinValues{req(awsv1.LabelInstanceGeneration, corev1.NodeSelectorOpGt, "6")}, nil,
			cloud.OfferingKey{InstanceType: "c7g.large", Zone: ZoneA, CapacityType: karpv1.CapacityTypeSpot}, 0.0228},
		{"generation Gte 7 and amd64 on-demand", []karpv1.NodeSelectorRequirementWithMinValues{
			req(awsv1.LabelInstanceGeneration, karpv1.NodeSelectorOpGte, "7"),
			req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
			req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand)}, nil,
			cloud.OfferingKey{InstanceType: "c7i.large", Zone: ZoneC, CapacityType: karpv1.CapacityTypeOnDemand}, 0.0899},
		{"not burstable, memory Lt 8192", []karpv1.NodeSelectorRequirementWithMinValues{
			req(awsv1.LabelInstanceCategory, corev1.NodeSelectorOpNotIn, "t"),
			req(awsv1.LabelInstanceMemory, corev1.NodeSelectorOpLt, "8192")}, nil,
			cloud.OfferingKey{InstanceType: "c6g.large", Zone: ZoneA, CapacityType: karpv1.CapacityTypeSpot}, 0.0221},
		{"3 cpu 20Gi", nil, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("20Gi")},
			cloud.OfferingKey{InstanceType: "r6g.xlarge", Zone: ZoneA, CapacityType: karpv1.CapacityTypeSpot}, 0.0688},
		{"one GPU", nil, corev1.ResourceList{ResourceNvidiaGPU: resource.MustParse("1")},
			cloud.OfferingKey{InstanceType: "g4dn.xlarge", Zone: ZoneB, CapacityType: karpv1.CapacityTypeSpot}, 0.1799},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider()
			claim := newClaim("claim-1", tc.requests, tc.reqs...)
			got, err := p.Create(context.Background(), claim)
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			insts := p.Instances()
			if len(insts) != 1 {
				t.Fatalf("%d instances, want 1", len(insts))
			}
			inst := insts[0]
			key := cloud.OfferingKey{InstanceType: inst.InstanceType, Zone: inst.Zone, CapacityType: inst.CapacityType}
			if key != tc.want || inst.PricePerHour != tc.price {
				t.Fatalf("launched %+v at %v, want %+v at %v", key, inst.PricePerHour, tc.want, tc.price)
			}
			wantLabels := map[string]string{
				corev1.LabelInstanceTypeStable: tc.want.InstanceType,
				corev1.LabelTopologyZone:       tc.want.Zone,
				corev1.LabelTopologyRegion:     Region,
				karpv1.CapacityTypeLabelKey:    tc.want.CapacityType,
				karpv1.NodePoolLabelKey:        "default",
				"team":                         "a",
				corev1.LabelOSStable:           "linux",
			}
			for k, v := range wantLabels {
				if got.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, got.Labels[k], v)
				}
			}
			it := byName(Catalog())[tc.want.InstanceType]
			allocatable := it.Allocatable()
			if got.Status.ProviderID != "fake:///"+tc.want.Zone+"/i-00000000000000001" || got.Status.ImageID != ImageID ||
				got.Status.Capacity.Cpu().Cmp(*it.Capacity.Cpu()) != 0 ||
				got.Status.Allocatable.Memory().Cmp(*allocatable.Memory()) != 0 {
				t.Errorf("status = %+v", got.Status)
			}
			if claim.Status.ProviderID != "" || len(claim.Labels) != 2 {
				t.Errorf("Create changed its argument: %+v", claim)
			}
			if inst.NodePool != "default" || inst.ClaimUID != "claim-1-uid" || !inst.LaunchTime.Equal(epoch) ||
				inst.Tags["kubernetes.io/cluster/test"] != "owned" || inst.Tags[awsv1.TagKeyNodeClaim] != "claim-1" || inst.Tags[awsv1.TagKeyNodeClass] != "default" {
				t.Errorf("instance record = %+v", inst)
			}
		})
	}
}

func TestCreateFailures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reqs     []karpv1.NodeSelectorRequirementWithMinValues
		requests corev1.ResourceList
		want     string
	}{
		{"too big", nil, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200")},
			`nodeclaim "big": 2442 offerings satisfy its requirements but none has allocatable for requests {cpu=200}`},
		{"no such label value", []karpv1.NodeSelectorRequirementWithMinValues{req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "s390x")}, nil,
			`nodeclaim "big": no offering satisfies its requirements`},
		{"reserved capacity", []karpv1.NodeSelectorRequirementWithMinValues{req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "reserved")}, nil,
			`nodeclaim "big": no offering satisfies its requirements`},
		{"invalid Gt", []karpv1.NodeSelectorRequirementWithMinValues{req(awsv1.LabelInstanceCPU, corev1.NodeSelectorOpGt, "many")}, nil,
			`nodeclaim "big" has invalid requirements`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider()
			_, err := p.Create(context.Background(), newClaim("big", tc.requests, tc.reqs...))
			if err == nil || !strings.Contains(err.Error(), tc.want) || cloud.IsInsufficientCapacity(err) {
				t.Fatalf("Create error = %v, want one containing %q", err, tc.want)
			}
			if n := len(p.Instances()); n != 0 {
				t.Fatalf("%d instances after a failed Create", n)
			}
		})
	}
}

func TestCreateIsIdempotentPerUID(t *testing.T) {
	ctx := context.Background()
	p := newProvider()
	first, err := p.Create(ctx, newClaim("a", nil))
	if err != nil {
		t.Fatal(err)
	}
	// A retry after a crash may see a different cheapest offering; it must still get the first instance.
	p.InjectInsufficientCapacity(cloud.OfferingKey{InstanceType: "t4g.large", Zone: ZoneC, CapacityType: karpv1.CapacityTypeSpot})
	again, err := p.Create(ctx, newClaim("a", nil))
	if err != nil {
		t.Fatal(err)
	}
	if again.Status.ProviderID != first.Status.ProviderID {
		t.Fatalf("retry launched %s, first was %s", again.Status.ProviderID, first.Status.ProviderID)
	}
	other, err := p.Create(ctx, newClaim("b", nil))
	if err != nil {
		t.Fatal(err)
	}
	if other.Status.ProviderID == first.Status.ProviderID || other.Labels[corev1.LabelInstanceTypeStable] != "c6g.large" {
		t.Fatalf("second claim got %s (%s)", other.Status.ProviderID, other.Labels[corev1.LabelInstanceTypeStable])
	}
	if ids := p.Instances(); len(ids) != 2 || ids[0].ID != "i-00000000000000001" || ids[1].ID != "i-00000000000000002" {
		t.Fatalf("instances = %+v", ids)
	}
}

func TestInsufficientCapacity(t *testing.T) {
	ctx := context.Background()
	p := newProvider()
	var t4g []cloud.OfferingKey
	for _, z := range Zones() {
		for _, ct := range []string{karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeSpot} {
			t4g = append(t4g, cloud.OfferingKey{InstanceType: "t4g.large", Zone: z, CapacityType: ct})
		}
	}
	p.InjectInsufficientCapacity(t4g...)
	claim := newClaim("gpu-less", nil, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "t4g.large"))
	_, err := p.Create(ctx, claim)
	var ice *cloud.InsufficientCapacityError
	if !errors.As(err, &ice) || len(ice.Offerings) != 6 || !strings.Contains(ice.Message, `"gpu-less"`) {
		t.Fatalf("Create error = %v, want InsufficientCapacityError for 6 offerings", err)
	}
	for i, k := range t4g {
		if ice.Offerings[i] != k {
			t.Errorf("offering %d = %+v, want %+v", i, ice.Offerings[i], k)
		}
	}
	types, err := p.InstanceTypes(ctx, nil)
	if err != nil || len(types) != len(Catalog()) {
		t.Fatalf("InstanceTypes = %d types, %v", len(types), err)
	}
	for _, it := range types {
		for _, o := range it.Offerings {
			if want := it.Name != "t4g.large"; o.Available != want {
				t.Errorf("%s %s/%s available = %v, want %v", it.Name, o.Zone, o.CapacityType, o.Available, want)
			}
		}
	}
	// Without the instance-type pin the claim falls back to the next cheapest type.
	got, err := p.Create(ctx, newClaim("flexible", nil))
	if err != nil || got.Labels[corev1.LabelInstanceTypeStable] != "c6g.large" {
		t.Fatalf("fallback Create = %v, %v", got.Labels[corev1.LabelInstanceTypeStable], err)
	}
	p.ClearInsufficientCapacity()
	if _, err := p.Create(ctx, claim); err != nil {
		t.Fatalf("Create after clearing: %v", err)
	}
}

func TestDeleteGetList(t *testing.T) {
	ctx := context.Background()
	p := newProvider()
	claim, err := p.Create(ctx, newClaim("a", nil))
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Get(ctx, claim.Status.ProviderID)
	if err != nil || got.Name != "a" || got.Labels[corev1.LabelInstanceTypeStable] != "t4g.large" ||
		got.Status.Capacity.Pods().Value() != 29 || !got.CreationTimestamp.Time.Equal(epoch) {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if list, err := p.List(ctx); err != nil || len(list) != 1 || list[0].Status.ProviderID != claim.Status.ProviderID {
		t.Fatalf("List = %+v, %v", list, err)
	}
	p.SetDrifted(claim.Status.ProviderID, "AMIDrift")
	if r, _ := p.IsDrifted(ctx, claim); r != "AMIDrift" {
		t.Fatalf("IsDrifted = %q", r)
	}
	if err := p.Delete(ctx, claim); err != nil {
		t.Fatalf("first Delete: %v", err)
	}
	if err := p.Delete(ctx, claim); !cloud.IsNotFound(err) {
		t.Fatalf("second Delete = %v, want NotFound", err)
	}
	if _, err := p.Get(ctx, claim.Status.ProviderID); !cloud.IsNotFound(err) {
		t.Fatalf("Get after Delete = %v, want NotFound", err)
	}
	if list, _ := p.List(ctx); len(list) != 0 {
		t.Fatalf("List after Delete = %d claims", len(list))
	}

	// A claim whose provider ID was never written back is still found by its UID.
	if _, err := p.Create(ctx, newClaim("lost", nil)); err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(ctx, newClaim("lost", nil)); err != nil {
		t.Fatalf("Delete by UID: %v", err)
	}
	if n := len(p.Instances()); n != 0 {
		t.Fatalf("%d instances left", n)
	}
}

func TestFailNextCreate(t *testing.T) {
	p := newProvider()
	boom := errors.New("boom")
	p.FailNextCreate(boom)
	if _, err := p.Create(context.Background(), newClaim("a", nil)); !errors.Is(err, boom) {
		t.Fatalf("Create = %v, want boom", err)
	}
	if _, err := p.Create(context.Background(), newClaim("a", nil)); err != nil {
		t.Fatalf("second Create: %v", err)
	}
}
