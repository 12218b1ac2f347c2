package aws

import (
	"testing"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	"github.com/tailor-sh/tailor/pkg/aws/ec2facts/ec2factstest"
)

// TestRecordedAnswers runs the conversion over the DescribeInstanceTypes answers Karpenter
// recorded from EC2 (not the emulator's), for the types it recorded, and compares the labels,
// capacity and allocatable with what Karpenter publishes for them.
func TestRecordedAnswers(t *testing.T) {
	published := ec2factstest.Karpenter()
	nc := &awsv1.EC2NodeClass{}
	var mismatches []ec2factstest.Mismatch
	recorded := ec2factstest.Recorded()
	for _, info := range recorded {
		name := string(info.InstanceType)
		want, ok := published[name]
		if !ok {
			t.Errorf("%s: recorded, but Karpenter's reference does not list it", name)
			continue
		}
		r, err := typeResources(info, awsv1.AMIFamilyAL2023, kubeletConfig{}, 0, rootVolumeSize(nc), DefaultVMMemoryOverheadPercent)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		alloc := r.capacity.DeepCopy()
		for k, v := range r.overhead {
			q := alloc[k]
			q.Sub(v)
			alloc[k] = q
		}
		mismatches = append(mismatches, ec2factstest.Check(name, typeLabels(info), r.capacity, alloc, want)...)
	}
	if len(mismatches) > 0 {
		t.Errorf("%d mismatches over %d recorded types, by field:\n%s", len(mismatches), len(recorded), ec2factstest.ByField(mismatches))
		for _, m := range mismatches {
			t.Error(m)
		}
	}
}

// TestFlexKeys: every type says whether it is flex under Karpenter's key; flex types keep the
// key Tailor used before, so NodePools that select on it still match.
func TestFlexKeys(t *testing.T) {
	for _, info := range ec2factstest.Recorded() {
		l := typeLabels(info)
		flex := l[awsv1.LabelInstanceCapabilityFlex]
		old, hasOld := l[awsv1.LabelInstanceCapacityFlex]
		switch info.InstanceType {
		case "m7i-flex.large":
			if flex != "true" || old != "true" {
				t.Errorf("%s: %s=%q, %s=%q; want both true", info.InstanceType, awsv1.LabelInstanceCapabilityFlex, flex, awsv1.LabelInstanceCapacityFlex, old)
			}
		default:
			if flex != "false" || hasOld {
				t.Errorf("%s: %s=%q, %s=%q (set %v); want false and unset", info.InstanceType, awsv1.LabelInstanceCapabilityFlex, flex, awsv1.LabelInstanceCapacityFlex, old, hasOld)
			}
		}
	}
}
