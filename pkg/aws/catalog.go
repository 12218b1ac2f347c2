package aws

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// catalog caches what EC2 sells in the region: instance type descriptions and the zones each is
// offered in. It is re-read every CatalogRefreshInterval; a failed refresh keeps the old data,
// because an outage of the EC2 API must not empty the scheduler's view of the world.
type catalog struct {
	ec2   *ec2.Client
	clock clock.Clock

	mu      sync.Mutex
	fetched time.Time
	types   []ec2types.InstanceTypeInfo // sorted by name
	zones   map[string]sets.Set[string]
}

func (c *catalog) get(ctx context.Context) ([]ec2types.InstanceTypeInfo, map[string]sets.Set[string], error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.types != nil && c.clock.Since(c.fetched) < CatalogRefreshInterval {
		return c.types, c.zones, nil
	}
	types, zones, err := c.fetch(ctx)
	if err != nil {
		if c.types != nil {
			return c.types, c.zones, nil
		}
		return nil, nil, err
	}
	c.fetched = c.clock.Now()
	// A refresh that found what was known keeps the objects from before: the offerings built
	// from them are kept while they are the same (launchKey).
	if c.types == nil || !reflect.DeepEqual(types, c.types) || !reflect.DeepEqual(zones, c.zones) {
		c.types, c.zones = types, zones
	}
	return c.types, c.zones, nil
}

// fetch lists HVM x86_64/arm64 types (what the supported AMI families boot) and their zonal
// offerings, region-wide in two paginated listings.
func (c *catalog) fetch(ctx context.Context) ([]ec2types.InstanceTypeInfo, map[string]sets.Set[string], error) {
	var types []ec2types.InstanceTypeInfo
	p := ec2.NewDescribeInstanceTypesPaginator(c.ec2, &ec2.DescribeInstanceTypesInput{
		MaxResults: aws.Int32(100),
		Filters: []ec2types.Filter{
			{Name: aws.String("supported-virtualization-type"), Values: []string{"hvm"}},
			{Name: aws.String("processor-info.supported-architecture"), Values: []string{"x86_64", "arm64"}},
		},
	})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("describing instance types: %w", err)
		}
		types = append(types, out.InstanceTypes...)
	}
	sort.Slice(types, func(i, j int) bool { return types[i].InstanceType < types[j].InstanceType })

	zones := map[string]sets.Set[string]{}
	op := ec2.NewDescribeInstanceTypeOfferingsPaginator(c.ec2, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone, MaxResults: aws.Int32(1000)})
	for op.HasMorePages() {
		out, err := op.NextPage(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("describing instance type offerings: %w", err)
		}
		for _, o := range out.InstanceTypeOfferings {
			name := string(o.InstanceType)
			if zones[name] == nil {
				zones[name] = sets.New[string]()
			}
			zones[name].Insert(aws.ToString(o.Location))
		}
	}
	return types, zones, nil
}
