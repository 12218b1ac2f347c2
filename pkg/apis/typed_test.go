package apis_test

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/utils/ptr"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// Objects built in Go, with every field set, must serialize into something their CRD neither
// prunes (a JSON tag the schema does not know) nor refuses (e.g. a duration String() that the
// pattern rejects). This is what the planner and controllers will write.
func TestTypedObjectsAreAdmitted(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	requirements := []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m6i.large", "m7i.large"}, MinValues: ptr.To(2)},
		{Key: awsv1.LabelInstanceCPU, Operator: karpv1.NodeSelectorOpGte, Values: []string{"2"}},
		{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeSpot}},
	}
	taints := []corev1.Taint{{Key: "example.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	ref := &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}

	pool := &karpv1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: "karpenter.sh/v1", Kind: "NodePool"},
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{
				ObjectMeta: karpv1.ObjectMeta{Labels: map[string]string{"example.com/team": "a"}, Annotations: map[string]string{"a": "b"}},
				Spec: karpv1.NodeClaimTemplateSpec{
					Taints: taints, StartupTaints: taints, Requirements: requirements, NodeClassRef: ref,
					TerminationGracePeriod: &metav1.Duration{Duration: time.Hour},
					ExpireAfter:            karpv1.NewNillableDuration(720 * time.Hour),
				},
			},
			Disruption: karpv1.Disruption{
				ConsolidateAfter:    karpv1.NewNillableDuration(30 * time.Second),
				ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmpty,
				Budgets: []karpv1.Budget{{
					Nodes: "0", Schedule: ptr.To("0 9 * * mon-fri"), Duration: &metav1.Duration{Duration: 8*time.Hour + 30*time.Minute},
					Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted},
				}},
			},
			Limits: karpv1.Limits{corev1.ResourceCPU: resource.MustParse("1000")},
			Weight: ptr.To[int32](10),
		},
		Status: karpv1.NodePoolStatus{Resources: corev1.ResourceList{"nodes": resource.MustParse("3")}, NodeClassObservedGeneration: 2},
	}
	pool.SetCondition(karpv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, "", "", now)

	claim := &karpv1.NodeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: "default-abcde"},
		Spec: karpv1.NodeClaimSpec{
			Taints: taints, StartupTaints: taints, NodeClassRef: ref,
			Requirements: append(requirements, karpv1.NodeSelectorRequirementWithMinValues{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"default"}}),
			Resources:    karpv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}},
			ExpireAfter:  karpv1.NillableDuration{}, // Never
		},
		Status: karpv1.NodeClaimStatus{
			NodeName: "ip-10-0-0-1", ProviderID: "aws:///us-west-2a/i-0123", ImageID: "ami-0123",
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m")},
			LastPodEventTime: metav1.NewTime(now),
		},
	}
	claim.SetCondition(karpv1.ConditionTypeLaunched, metav1.ConditionFalse, "", "a message", now)

	class := &awsv1.EC2NodeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: "karpenter.k8s.aws/v1", Kind: "EC2NodeClass"},
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			SubnetSelectorTerms:              []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"a": "b"}}, {ID: "subnet-0123"}},
			SecurityGroupSelectorTerms:       []awsv1.SecurityGroupSelectorTerm{{Name: "nodes"}},
			CapacityReservationSelectorTerms: []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"a": "b"}, OwnerID: "123456789012", InstanceMatchCriteria: "targeted"}},
			AssociatePublicIPAddress:         ptr.To(false),
			AMISelectorTerms:                 []awsv1.AMISelectorTerm{{Name: "my-ami-*", Owner: "self"}, {SSMParameter: "/my/ami"}, {Tags: map[string]string{"a": "b"}}},
			AMIFamily:                        ptr.To(awsv1.AMIFamilyAL2023),
			UserData:                         ptr.To("#!/bin/bash"),
			InstanceProfile:                  ptr.To("my-profile"),
			Tags:                             map[string]string{"team": "a"},
			Kubelet: &awsv1.KubeletConfiguration{
				ClusterDNS: []string{"10.0.0.10"}, MaxPods: ptr.To[int32](110), PodsPerCore: ptr.To[int32](10),
				SystemReserved: map[string]string{"cpu": "100m"}, KubeReserved: map[string]string{"memory": "1Gi"},
				EvictionHard: map[string]string{"memory.available": "5%"}, EvictionSoft: map[string]string{"memory.available": "500Mi"},
				EvictionSoftGracePeriod:   map[string]metav1.Duration{"memory.available": {Duration: time.Minute}},
				EvictionMaxPodGracePeriod: ptr.To[int32](60), ImageGCHighThresholdPercent: ptr.To[int32](85), ImageGCLowThresholdPercent: ptr.To[int32](80),
				CPUCFSQuota: ptr.To(true),
			},
			BlockDeviceMappings: []awsv1.BlockDeviceMapping{{
				DeviceName: ptr.To("/dev/xvda"), RootVolume: true,
				EBS: &awsv1.BlockDevice{
					DeleteOnTermination: ptr.To(true), Encrypted: ptr.To(true), IOPS: ptr.To[int64](3000), KMSKeyID: ptr.To("alias/ebs"),
					SnapshotID: ptr.To("snap-0123"), Throughput: ptr.To[int64](125), VolumeSize: ptr.To(resource.MustParse("100Gi")), VolumeType: ptr.To("gp3"),
				},
			}},
			InstanceStorePolicy: ptr.To(awsv1.InstanceStorePolicyRAID0),
			DetailedMonitoring:  ptr.To(true),
			MetadataOptions:     &awsv1.MetadataOptions{HTTPEndpoint: ptr.To("enabled"), HTTPProtocolIPv6: ptr.To("disabled"), HTTPPutResponseHopLimit: ptr.To[int64](2), HTTPTokens: ptr.To("required")},
			Context:             ptr.To("c-0123"),
		},
		Status: awsv1.EC2NodeClassStatus{
			Subnets:        []awsv1.Subnet{{ID: "subnet-0123", Zone: "us-west-2a", ZoneID: "usw2-az1"}},
			SecurityGroups: []awsv1.SecurityGroup{{ID: "sg-0123", Name: "nodes"}},
			CapacityReservations: []awsv1.CapacityReservation{{
				ID: "cr-0123", InstanceType: "m6i.large", AvailabilityZone: "us-west-2a", OwnerID: "123456789012",
				InstanceMatchCriteria: "targeted", ReservationType: "capacity-block", State: "active", EndTime: ptr.To(metav1.NewTime(now)),
			}},
			AMIs:            []awsv1.AMI{{ID: "ami-0123", Name: "al2023", Deprecated: true, Requirements: []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}}},
			InstanceProfile: "my-profile",
		},
	}
	class.SetCondition(awsv1.ConditionTypeAMIsReady, metav1.ConditionTrue, "", "", now)

	adm := admitters(t)
	for kind, obj := range map[string]interface{}{"NodePool": pool, "NodeClaim": claim, "EC2NodeClass": class} {
		t.Run(kind, func(t *testing.T) {
			data, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			u := map[string]interface{}{}
			if err := utiljson.Unmarshal(data, &u); err != nil {
				t.Fatal(err)
			}
			if pruned := adm[kind].unknownFields(u); len(pruned) > 0 {
				t.Fatalf("fields unknown to the CRD: %v", pruned)
			}
			if errs := adm[kind].admit(u, nil); len(errs) > 0 {
				t.Fatalf("refused: %v", errs.ToAggregate())
			}
		})
	}
}
