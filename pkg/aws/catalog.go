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

	"github.com/tailor-sh/tailor/pkg/cloud"
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

// unavailableOfferings remembers offerings EC2 recently had no capacity for, so the planner
// stops choosing them until the TTL passes on the injected clock.
type unavailableOfferings struct {
	clock clock.Clock
	ttl   time.Duration

	mu     sync.Mutex
	expiry map[cloud.OfferingKey]time.Time
	// marks counts the marks, so that what was offered before one can be told stale.
	marks uint64
}

func newUnavailableOfferings(clk clock.Clock, ttl time.Duration) *unavailableOfferings {
	return &unavailableOfferings{clock: clk, ttl: ttl, expiry: map[cloud.OfferingKey]time.Time{}}
}

// mark makes the offering unavailable for the TTL from now; marking again extends it.
func (u *unavailableOfferings) mark(key cloud.OfferingKey) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.expiry[key] = u.clock.Now().Add(u.ttl)
	u.marks++
}

// version changes whenever the set of unavailable offerings does: on a mark, and once a mark
// lapses (the count of those in force changes; a mark and a lapse at once change marks).
func (u *unavailableOfferings) version() [2]uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	now, live := u.clock.Now(), uint64(0)
	for key, until := range u.expiry {
		if now.Before(until) {
			live++
		} else {
			delete(u.expiry, key)
		}
	}
	return [2]uint64{u.marks, live}
}

func (u *unavailableOfferings) has(key cloud.OfferingKey) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	until, ok := u.expiry[key]
	if ok && !u.clock.Now().Before(until) {
		delete(u.expiry, key)
		return false
	}
	return ok
}
