package emulator_test

import (
	"context"
	"encoding/base64"
	"errors"
	"math"
	"regexp"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailor-sh/tailor/pkg/aws/ec2facts"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/aws/sdkhttp"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// sdkConfig points real SDK clients at the emulator, retrying quickly so tests stay fast.
func sdkConfig(e *emulator.Emulator) aws.Config {
	return aws.Config{
		Region:       emulator.Region,
		BaseEndpoint: aws.String(e.URL()),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		// As the provider's clients: see sdkhttp.OwnBodies.
		HTTPClient: sdkhttp.OwnBodies{Next: awshttp.NewBuildableClient()},
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 3
				o.Backoff = retry.NewExponentialJitterBackoff(5 * time.Millisecond)
			})
		},
	}
}

func start(t testing.TB, opts emulator.Options) (*emulator.Emulator, aws.Config) {
	t.Helper()
	if opts.Clock == nil {
		opts.Clock = clocktesting.NewFakeClock(time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC))
	}
	if opts.ClusterName == "" {
		opts.ClusterName = "tailor"
	}
	e := emulator.Start(opts)
	t.Cleanup(e.Close)
	return e, sdkConfig(e)
}

func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// TestCatalogPagination reads the catalog through the SDK's paginators with pages forced small.
func TestCatalogPagination(t *testing.T) {
	_, cfg := start(t, emulator.Options{MaxPageSize: 100})
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	types := len(ec2facts.TypesIn(emulator.Region))

	var infos []ec2types.InstanceTypeInfo
	pages := 0
	for p := ec2.NewDescribeInstanceTypesPaginator(client, &ec2.DescribeInstanceTypesInput{
		Filters: []ec2types.Filter{{Name: aws.String("supported-virtualization-type"), Values: []string{"hvm"}}},
	}); p.HasMorePages(); pages++ {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		infos = append(infos, out.InstanceTypes...)
	}
	if len(infos) != types || pages < 2 {
		t.Fatalf("got %d instance types in %d pages, want %d in several", len(infos), pages, types)
	}

	var offerings int
	for p := ec2.NewDescribeInstanceTypeOfferingsPaginator(client, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone}); p.HasMorePages(); {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		offerings += len(out.InstanceTypeOfferings)
	}
	if offerings != 3*types {
		t.Errorf("got %d zonal offerings, want %d", offerings, 3*types)
	}

	var spot []ec2types.SpotPrice
	for p := ec2.NewDescribeSpotPriceHistoryPaginator(client, &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"}, StartTime: aws.Time(time.Now())}); p.HasMorePages(); {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		spot = append(spot, out.SpotPriceHistory...)
	}
	if len(spot) != 3*types {
		t.Errorf("got %d spot prices, want %d", len(spot), 3*types)
	}
	windows, err := client.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{ProductDescriptions: []string{"Windows", "Windows (Amazon VPC)"},
		InstanceTypes: []ec2types.InstanceType{spot[0].InstanceType}, AvailabilityZone: spot[0].AvailabilityZone})
	if err != nil || len(windows.SpotPriceHistory) != 1 || windows.SpotPriceHistory[0].ProductDescription != "Windows" {
		t.Fatalf("Windows spot price of %s in %s: %+v, %v", spot[0].InstanceType, aws.ToString(spot[0].AvailabilityZone), windows, err)
	}
	lin, _ := strconv.ParseFloat(aws.ToString(spot[0].SpotPrice), 64)
	win, _ := strconv.ParseFloat(aws.ToString(windows.SpotPriceHistory[0].SpotPrice), 64)
	if win <= lin {
		t.Errorf("%s spot: Windows %v, Linux %v; want Windows dearer", spot[0].InstanceType, win, lin)
	}
}

func TestDescribeInstanceTypeShape(t *testing.T) {
	_, cfg := start(t, emulator.Options{})
	out, err := ec2.NewFromConfig(cfg).DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []ec2types.InstanceType{"m6g.large", "g5.12xlarge"}})
	if err != nil {
		t.Fatal(err)
	}
	m6g, g5 := out.InstanceTypes[0], out.InstanceTypes[1]
	if *m6g.VCpuInfo.DefaultVCpus != 2 || *m6g.MemoryInfo.SizeInMiB != 8192 || m6g.ProcessorInfo.SupportedArchitectures[0] != ec2types.ArchitectureTypeArm64 ||
		*m6g.NetworkInfo.MaximumNetworkInterfaces != 3 || *m6g.NetworkInfo.Ipv4AddressesPerInterface != 10 || m6g.Hypervisor != "nitro" {
		t.Errorf("m6g.large described as %+v", m6g)
	}
	if g5.GpuInfo == nil || *g5.GpuInfo.Gpus[0].Count != 4 || *g5.GpuInfo.Gpus[0].Manufacturer != "NVIDIA" {
		t.Errorf("g5.12xlarge GPUs = %+v", g5.GpuInfo)
	}
}

func TestEC2ErrorCodes(t *testing.T) {
	_, cfg := start(t, emulator.Options{})
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func() error
		code string
	}{
		{"unknown instance type", func() error {
			_, err := client.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"z9.huge"}})
			return err
		}, "InvalidInstanceType"},
		{"unknown subnet", func() error {
			_, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-nope"}})
			return err
		}, "InvalidSubnetID.NotFound"},
		{"unknown security group", func() error {
			_, err := client.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{"sg-nope"}})
			return err
		}, "InvalidGroup.NotFound"},
		{"unknown image", func() error {
			_, err := client.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{"ami-nope"}})
			return err
		}, "InvalidAMIID.NotFound"},
		{"unknown instance", func() error {
			_, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-nope"}})
			return err
		}, "InvalidInstanceID.NotFound"},
		{"terminate unknown instance", func() error {
			_, err := client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{"i-nope"}})
			return err
		}, "InvalidInstanceID.NotFound"},
		{"unsupported filter", func() error {
			_, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("bogus"), Values: []string{"x"}}}})
			return err
		}, "InvalidParameterValue"},
		{"missing launch template", func() error {
			_, err := client.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"nope"}})
			return err
		}, "InvalidLaunchTemplateName.NotFoundException"},
		{"delete missing launch template", func() error {
			_, err := client.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("nope")})
			return err
		}, "InvalidLaunchTemplateName.NotFoundException"},
		{"bad next token", func() error {
			_, err := client.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{NextToken: aws.String("garbage!")})
			return err
		}, "InvalidNextToken"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorCode(tc.call()); got != tc.code {
				t.Errorf("error code = %q, want %q", got, tc.code)
			}
		})
	}
}

func TestSelectorsByTag(t *testing.T) {
	e, cfg := start(t, emulator.Options{ClusterName: "blue"})
	e.AddSubnet(emulator.Subnet{ID: "subnet-other", Zone: fake.ZoneA, CIDR: "10.1.0.0/24", AvailableIPs: 10, Tags: map[string]string{emulator.DiscoveryTag: "green"}})
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	subnets, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("tag:" + emulator.DiscoveryTag), Values: []string{"blue"}}}})
	if err != nil || len(subnets.Subnets) != 3 {
		t.Fatalf("subnets tagged blue = %d, %v; want 3", len(subnets.Subnets), err)
	}
	wild, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("tag:" + emulator.DiscoveryTag), Values: []string{"*"}}}})
	if err != nil || len(wild.Subnets) != 4 {
		t.Fatalf("subnets with any discovery tag = %d, %v; want 4", len(wild.Subnets), err)
	}
	images, err := client.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"},
		Filters: []ec2types.Filter{{Name: aws.String("name"), Values: []string{"amazon-eks-node-al2023-*-v20240625"}}}})
	if err != nil || len(images.Images) != 3 {
		t.Fatalf("AL2023 images of release v20240625 = %d, %v; want 3", len(images.Images), err)
	}
}

func TestLaunchTemplateLifecycle(t *testing.T) {
	_, cfg := start(t, emulator.Options{})
	client := ec2.NewFromConfig(cfg)
	ctx := context.Background()
	create := func() error {
		_, err := client.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("tailor/a"),
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1"), UserData: aws.String(base64.StdEncoding.EncodeToString([]byte("x")))},
			TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: []ec2types.Tag{{Key: aws.String("cluster"), Value: aws.String("tailor")}}}}})
		return err
	}
	if err := create(); err != nil {
		t.Fatal(err)
	}
	if code := errorCode(create()); code != "InvalidLaunchTemplateName.AlreadyExistsException" {
		t.Errorf("second create: code %q", code)
	}
	out, err := client.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{{Name: aws.String("tag:cluster"), Values: []string{"tailor"}}}})
	if err != nil || len(out.LaunchTemplates) != 1 || *out.LaunchTemplates[0].LaunchTemplateName != "tailor/a" {
		t.Fatalf("describe by tag: %+v, %v", out, err)
	}
	if _, err := client.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("tailor/a")}); err != nil {
		t.Fatal(err)
	}
}

func TestThrottlingIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name      string
		throttles int
		wantCode  string
		wantCalls int
	}{
		{name: "retries succeed", throttles: 2, wantCalls: 3},
		{name: "retries exhausted", throttles: 5, wantCode: "RequestLimitExceeded", wantCalls: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, cfg := start(t, emulator.Options{})
			e.Throttle("DescribeSubnets", tc.throttles)
			_, err := ec2.NewFromConfig(cfg).DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{})
			if got := errorCode(err); got != tc.wantCode {
				t.Errorf("error code %q (%v), want %q", got, err, tc.wantCode)
			}
			if got := e.Calls("DescribeSubnets"); got != tc.wantCalls {
				t.Errorf("%d calls, want %d", got, tc.wantCalls)
			}
		})
	}
}

func TestSSMAndPricing(t *testing.T) {
	e, cfg := start(t, emulator.Options{MaxPageSize: 100})
	ctx := context.Background()
	param := "/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/standard/recommended/image_id"
	out, err := ssm.NewFromConfig(cfg).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(param)})
	want, _ := e.Parameter(param)
	if err != nil || *out.Parameter.Value != want {
		t.Fatalf("GetParameter = %+v, %v; want %s", out, err, want)
	}
	_, err = ssm.NewFromConfig(cfg).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/nope")})
	if code := errorCode(err); code != "ParameterNotFound" {
		t.Errorf("missing parameter: code %q", code)
	}
	client := pricing.NewFromConfig(cfg)
	products := func(field, value string) []string {
		var out []string
		for p := pricing.NewGetProductsPaginator(client, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"),
			Filters: []pricingtypes.Filter{{Field: aws.String(field), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String(value)}}}); p.HasMorePages(); {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, page.PriceList...)
		}
		return out
	}
	types := len(ec2facts.TypesIn(emulator.Region))
	if all := products("regionCode", emulator.Region); len(all) != 2*types || len(sets.New(all...)) != len(all) {
		t.Errorf("got %d products, %d distinct; want one per instance type and operating system (2×%d)", len(all), len(sets.New(all...)), types)
	}
	// Fields and values match whatever their case, as in EC2's price list; each spelling is
	// answered alike, from the list the emulator keeps.
	for _, spelt := range [][2]string{{"OPERATINGSYSTEM", "linux"}, {"operatingSystem", "Linux"}} {
		if got := products(spelt[0], spelt[1]); len(got) != types {
			t.Errorf("%s=%s: %d products, want one per instance type (%d)", spelt[0], spelt[1], len(got), types)
		}
	}
	// Each operating system is asked for on its own, as Tailor asks: Windows costs its Linux
	// price plus the licence.
	price := func(os string) float64 {
		out, err := client.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), Filters: []pricingtypes.Filter{
			{Field: aws.String("instanceType"), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String("m5.large")},
			{Field: aws.String("operatingSystem"), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String(os)}}})
		if err != nil || len(out.PriceList) != 1 {
			t.Fatalf("%s price of m5.large: %v, %d products", os, err, len(out.PriceList))
		}
		m := regexp.MustCompile(`"USD":"([0-9.]+)"`).FindStringSubmatch(out.PriceList[0])
		if m == nil {
			t.Fatalf("no USD price in %s", out.PriceList[0])
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	if lin, win := price("Linux"), price("Windows"); math.Abs(win-(lin+2*0.046)) > 1e-9 {
		t.Errorf("m5.large costs %v on Linux and %v on Windows; want 2 vCPUs × 0.046 more", lin, win)
	}
}

// TestLatency delays responses past a caller's deadline.
func TestLatency(t *testing.T) {
	e, cfg := start(t, emulator.Options{})
	e.SetLatency(time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := ec2.NewFromConfig(cfg).DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the caller's deadline", err)
	}
}
