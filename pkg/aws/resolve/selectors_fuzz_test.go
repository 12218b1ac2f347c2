package resolve

import (
	"context"
	"path"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/aws/sdkhttp"
)

// FuzzSelectorTerms resolves an EC2NodeClass's subnet selector term {tags: {key: value}} and its
// AMI alias through the real SDK against the emulator, and the same tags as a capacity reservation
// selector term. Properties: no panic; any key and value the CRD admits reach EC2 intact (the term
// selects exactly the subnets, and the reservations, whose tag matches, "*" meaning any value and
// EC2's wildcards applying); an alias reads as a supported family with a
// version and names its SSM parameters, or its error quotes the alias.
func FuzzSelectorTerms(f *testing.F) {
	for _, s := range [][3]string{{"karpenter.sh/discovery", "tailor", "al2023@latest"}, {"karpenter.sh/discovery", "*", "bottlerocket@v1.40.0"},
		{"Name", "tail?r", "al2@v20250715"}, {"kubernetes.io/role/internal-elb", "1", "windows2022@latest"}, {"a=b&c", "x y%", "ubuntu@22"},
		{"karpenter.sh/discovery", "[t]ailor", "AL2023"}, {"karpenter.sh/discovery", "tailor*", "@"}} {
		f.Add(s[0], s[1], s[2])
	}
	emu := emulator.Start(emulator.Options{ClusterName: "tailor"})
	f.Cleanup(emu.Close)
	// The provider's configuration for an endpoint (SDKConfig in pkg/aws) without its retries:
	// that package imports client-go, which this package's tests stay clear of.
	cfg := aws.Config{Region: emulator.Region, BaseEndpoint: aws.String(emu.URL()),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTAILORTEST", "tailor-test-secret", ""),
		Retryer:     func() aws.Retryer { return aws.NopRetryer{} },
		HTTPClient:  sdkhttp.OwnBodies{Next: awshttp.NewBuildableClient()}}
	r := New(cfg, "tailor", "1.36", nil, nil)
	reservationTags := map[string]string{"karpenter.sh/discovery": "tailor", "Name": "tailor-ml"}
	emu.AddCapacityReservation(emulator.CapacityReservation{InstanceType: "m5.large", Zone: "us-west-2a", Total: 1, Tags: reservationTags})
	all, err := ec2.NewFromConfig(cfg).DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{})
	if err != nil || len(all.Subnets) == 0 {
		f.Fatalf("the emulator has no subnets: %v", err)
	}
	f.Fuzz(func(t *testing.T, key, value, alias string) {
		if family, version, err := parseAlias(alias); err != nil {
			if !strings.Contains(err.Error(), alias) {
				t.Fatalf("alias error does not quote %q: %v", alias, err)
			}
		} else if params, err := aliasParameters(family, version, "1.36"); err != nil || len(params) == 0 || version == "" {
			t.Fatalf("alias %q read as %s@%s names no SSM parameter: %v", alias, family, version, err)
		}
		if key == "" || value == "" || len(key) > 127 || len(value) > 255 {
			return // the CRD and EC2 refuse these
		}
		got, err := r.subnets(context.Background(), []awsv1.SubnetSelectorTerm{{Tags: map[string]string{key: value}}})
		if err != nil {
			t.Fatalf("selecting subnets by %q=%q: %v", key, value, err)
		}
		want := map[string]bool{}
		for _, s := range all.Subnets {
			for _, tag := range s.Tags {
				v := aws.ToString(tag.Value)
				if ok, _ := path.Match(value, v); aws.ToString(tag.Key) == key && (value == "*" || ok || value == v) {
					want[aws.ToString(s.SubnetId)] = true
				}
			}
		}
		if len(got) != len(want) {
			t.Fatalf("tags %q=%q select %d subnets, want %d", key, value, len(got), len(want))
		}
		for _, s := range got {
			if !want[aws.ToString(s.SubnetId)] {
				t.Fatalf("tags %q=%q select %s, which does not carry them", key, value, aws.ToString(s.SubnetId))
			}
		}
		reservations, err := r.capacityReservations(context.Background(), []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{key: value}}})
		if err != nil {
			t.Fatalf("selecting capacity reservations by %q=%q: %v", key, value, err)
		}
		v, tagged := reservationTags[key]
		matched, _ := path.Match(value, v)
		if wantOne := tagged && (value == "*" || matched || value == v); (len(reservations) == 1) != wantOne {
			t.Fatalf("tags %q=%q select reservations %v; the one reservation carries %v", key, value, reservations, reservationTags)
		}
	})
}
