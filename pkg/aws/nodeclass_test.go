package aws_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name        string
		change      func(*awsv1.EC2NodeClass)
		wantReady   bool
		wantReason  string
		wantAMIs    int
		wantSubnets int
		// wantMessage, when set, is part of the Ready condition's message.
		wantMessage string
	}{
		// al2023@latest resolves to the standard images of both architectures and the NVIDIA
		// images of both (g5g is an arm64 GPU type).
		{name: "discovery tags", change: func(*awsv1.EC2NodeClass) {}, wantReady: true, wantAMIs: 4, wantSubnets: 3},
		{name: "subnet by id", change: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: "subnet-00000000000000002"}}
		}, wantReady: true, wantAMIs: 4, wantSubnets: 1},
		{name: "no subnet matches", change: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"nope": "*"}}}
		}, wantReason: "SubnetsNotFound"},
		{name: "security group by name", change: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Name: "tailor-node"}}
		}, wantReady: true, wantAMIs: 4, wantSubnets: 3},
		{name: "no security group matches", change: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{ID: "sg-nope"}}
		}, wantReason: "SecurityGroupsNotFound"},
		{name: "bottlerocket alias", change: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
		}, wantReady: true, wantAMIs: 3, wantSubnets: 3},
		{name: "pinned alias not published", change: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@v19990101"}}
		}, wantReason: "AMINotFound", wantMessage: "spec.amiSelectorTerms[0].alias: al2023@v19990101 not found"},
		{name: "pinned al2023 alias", change: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@v20240625"}}
		}, wantReady: true, wantAMIs: 3, wantSubnets: 3},
		{name: "pinned bottlerocket alias", change: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@v1.20.3"}}
		}, wantReady: true, wantAMIs: 3, wantSubnets: 3},
		{name: "pinned al2 alias", change: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2@v20240625"}}
		}, wantReady: true, wantAMIs: 3, wantSubnets: 3},
		{name: "bottlerocket version not released", change: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@v9.9.9"}}
		}, wantReason: "AMINotFound", wantMessage: "spec.amiSelectorTerms[0].alias: bottlerocket@v9.9.9 not found"},
		{name: "windows2019 alias", change: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "windows2019@latest"}}
		}, wantReady: true, wantAMIs: 1, wantSubnets: 3},
		{name: "windows2022 alias", change: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "windows2022@latest"}}
		}, wantReady: true, wantAMIs: 1, wantSubnets: 3},
		{name: "windows2025 alias", change: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "windows2025@latest"}}
		}, wantReady: true, wantAMIs: 1, wantSubnets: 3},
		{name: "windows user data with two blocks", change: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "windows2022@latest"}}
			nc.Spec.UserData = ptr("<powershell>\na\n</powershell>\n<powershell>\nb\n</powershell>")
		}, wantReason: "UserDataInvalid", wantMessage: "spec.userData"},
		{name: "bottlerocket user data not TOML", change: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
			nc.Spec.UserData = ptr("[settings.kubernetes\nmax-pods = 1")
		}, wantReason: "UserDataInvalid", wantMessage: "spec.userData"},
		{name: "al2023 NodeConfig not YAML", change: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.UserData = ptr("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: [unclosed")
		}, wantReason: "UserDataInvalid", wantMessage: "spec.userData"},
		{name: "AMI by name", change: func(nc *awsv1.EC2NodeClass) {
			custom := awsv1.AMIFamilyAL2023
			nc.Spec.AMIFamily = &custom
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Name: "amazon-eks-node-al2023-*-standard-*"}}
		}, wantReady: true, wantAMIs: 2, wantSubnets: 3},
		{name: "AMI id that does not exist", change: func(nc *awsv1.EC2NodeClass) {
			custom := awsv1.AMIFamilyCustom
			nc.Spec.AMIFamily = &custom
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-nope"}}
		}, wantReason: "AMINotFound"},
		{name: "role gets a managed instance profile", change: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.InstanceProfile, nc.Spec.Role = nil, emulator.NodeRoleName(cluster)
		}, wantReady: true, wantAMIs: 4, wantSubnets: 3},
		{name: "role that does not exist", change: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.InstanceProfile, nc.Spec.Role = nil, "KarpenterNodeRole-elsewhere"
		}, wantReason: "RoleNotFound"},
		{name: "neither role nor instance profile", change: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.InstanceProfile = nil
		}, wantReason: "InstanceProfileNotSet"},
		// Selecting no reservation leaves the class Ready, as in Karpenter: it launches on-demand
		// and spot capacity meanwhile (reservations_test.go covers what the terms select).
		{name: "capacity reservation that does not exist", change: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: "cr-1"}}
		}, wantReady: true, wantAMIs: 4, wantSubnets: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, emulator.Options{MaxPageSize: 1})
			nc := defaultClass()
			tc.change(nc)
			res, err := e.provider.Resolver().Resolve(context.Background(), nc)
			if err != nil {
				t.Fatal(err)
			}
			ready := res.NodeClass.GetCondition(awsv1.ConditionTypeReady)
			if got := ready.Status == metav1.ConditionTrue; got != tc.wantReady || (!tc.wantReady && ready.Reason != tc.wantReason) {
				t.Fatalf("Ready = %s/%s (%s), want ready=%v reason %s", ready.Status, ready.Reason, ready.Message, tc.wantReady, tc.wantReason)
			}
			if tc.wantMessage != "" && !strings.Contains(ready.Message, tc.wantMessage) {
				t.Errorf("Ready message %q does not say %q", ready.Message, tc.wantMessage)
			}
			if tc.wantReady && (len(res.NodeClass.Status.AMIs) != tc.wantAMIs || len(res.NodeClass.Status.Subnets) != tc.wantSubnets) {
				t.Errorf("resolved %d AMIs and %d subnets, want %d and %d", len(res.NodeClass.Status.AMIs), len(res.NodeClass.Status.Subnets), tc.wantAMIs, tc.wantSubnets)
			}
		})
	}
}

func TestIsDrifted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*env)
		want   cloud.DriftReason
	}{
		{name: "unchanged", change: func(*env) {}},
		{name: "reworded selector selecting the same subnets", change: func(e *env) {
			nc := e.class("default")
			nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: "subnet-00000000000000001"}, {ID: "subnet-00000000000000002"}, {ID: "subnet-00000000000000003"}}
			e.setClass(nc)
		}},
		{name: "subnet selector moved", change: func(e *env) {
			e.emu.AddSubnet(emulator.Subnet{ID: "subnet-new", Zone: fake.ZoneA, CIDR: "10.0.128.0/19", AvailableIPs: 100, Tags: map[string]string{"tier": "new"}})
			nc := e.class("default")
			nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"tier": "new"}}}
			e.setClass(nc)
		}, want: tailoraws.DriftSubnet},
		{name: "security group selector moved", change: func(e *env) {
			e.emu.AddSecurityGroup(emulator.SecurityGroup{ID: "sg-new", Name: "new", Tags: map[string]string{"tier": "new"}})
			nc := e.class("default")
			nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"tier": "new"}}}
			e.setClass(nc)
		}, want: tailoraws.DriftSecurityGroup},
		{name: "user data changed", change: func(e *env) {
			nc := e.class("default")
			nc.Spec.UserData = ptr("#!/bin/bash\necho changed")
			e.setClass(nc)
		}, want: tailoraws.DriftNodeClass},
		{name: "new recommended AMI", change: func(e *env) {
			e.emu.AddImage(emulator.Image{ID: "ami-newer", Name: "amazon-eks-node-al2023-x86_64-standard-1.36-vnext", Architecture: "x86_64",
				OwnerID: emulator.AccountID, OwnerAlias: "amazon", Created: e.clock.Now()})
			e.emu.SetParameter("/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/standard/recommended/image_id", "ami-newer")
			e.clock.Step(2 * time.Minute) // past the node class resolution cache
		}, want: tailoraws.DriftAMI},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, emulator.Options{})
			ctx := context.Background()
			launched, err := e.provider.Create(ctx, claim("a", karpv1.CapacityTypeOnDemand, "m5.large"))
			if err != nil {
				t.Fatal(err)
			}
			tc.change(e)
			got, err := e.provider.IsDrifted(ctx, launched)
			if err != nil || got != tc.want {
				t.Errorf("IsDrifted = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestPricingFallback: with the Pricing API and spot history unreachable, on-demand prices come
// from the built-in table and spot offerings are priced at on-demand until spot prices arrive.
func TestPricingFallback(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	e.emu.Throttle("GetProducts", 1000)
	e.emu.Throttle("DescribeSpotPriceHistory", 1000)
	od := offering(t, e.provider, cloud.OfferingKey{InstanceType: "m5.large", Zone: fake.ZoneA, CapacityType: karpv1.CapacityTypeOnDemand})
	spot := offering(t, e.provider, cloud.OfferingKey{InstanceType: "m5.large", Zone: fake.ZoneA, CapacityType: karpv1.CapacityTypeSpot})
	if od.PricePerHour != 0.096 || spot.PricePerHour != 0.096 || !od.Available || !spot.Available {
		t.Errorf("fallback prices: on-demand %+v, spot %+v; want both 0.096 and available", od, spot)
	}
	// Every type of the snapshot has a built-in price, metal and odd sizes included.
	for name, want := range map[string]float64{"c5.9xlarge": 1.53, "m5.metal": 4.608, "p4d.24xlarge": 21.95764} {
		o := offering(t, e.provider, cloud.OfferingKey{InstanceType: name, Zone: fake.ZoneA, CapacityType: karpv1.CapacityTypeOnDemand})
		if o.PricePerHour != want || !o.Available {
			t.Errorf("%s: fallback %+v, want %v and available", name, o, want)
		}
	}
	// Once the APIs answer (after the retry delay), their prices replace the fallback.
	e.emu.ClearThrottle()
	e.clock.Step(2 * time.Minute)
	spot = offering(t, e.provider, cloud.OfferingKey{InstanceType: "m5.large", Zone: fake.ZoneA, CapacityType: karpv1.CapacityTypeSpot})
	if spot.PricePerHour >= 0.096 {
		t.Errorf("spot price after refresh = %v, want the emulator's (lower) spot price", spot.PricePerHour)
	}
}

func TestLaunchTemplatesAreSharedAndCollected(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		if _, err := e.provider.Create(ctx, claim(name, karpv1.CapacityTypeOnDemand, "m5.large")); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(e.emu.LaunchTemplates()); n != 1 {
		t.Fatalf("%d launch templates for two identical claims, want 1", n)
	}
	if deleted, err := e.provider.CollectLaunchTemplates(ctx, 5*time.Minute); err != nil || len(deleted) != 0 {
		t.Fatalf("collected %v, %v while in use", deleted, err)
	}
	e.clock.Step(6 * time.Minute)
	if deleted, err := e.provider.CollectLaunchTemplates(ctx, 5*time.Minute); err != nil || len(deleted) != 1 || len(e.emu.LaunchTemplates()) != 0 {
		t.Fatalf("collected %v, %v; %d left", deleted, err, len(e.emu.LaunchTemplates()))
	}
	// A launch after collection makes the template again.
	if _, err := e.provider.Create(ctx, claim("c", karpv1.CapacityTypeOnDemand, "m5.large")); err != nil {
		t.Fatal(err)
	}
}
