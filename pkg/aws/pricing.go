package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	pricingapi "github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// retryFailedRefreshAfter spaces out refreshes after a failure, so a broken Pricing API is not
// called on every scheduling decision.
const retryFailedRefreshAfter = time.Minute

// prices caches on-demand prices (Pricing API, with the built-in table until it answers) and spot
// prices (spot price history), per operating system. Both refresh every CatalogRefreshInterval
// and merge over what was known, so a partial answer never makes a type unpriced. Windows prices
// are read only once a Windows node class asks for them (wantWindows).
type prices struct {
	ec2     *ec2.Client
	pricing *pricingapi.Client
	region  string
	clock   clock.Clock

	mu          sync.Mutex
	linux       *osPrices
	windows     *osPrices
	wantWindows bool
	// version counts the refreshes that changed a price, so that what was priced before can be
	// told stale (launchableTypes' cache).
	version uint64
}

// osPrices are one operating system's prices. A Windows instance costs its Linux price plus the
// licence, on demand and on spot alike.
type osPrices struct {
	// os is the Pricing API's operatingSystem; spotProducts the spot price history's product
	// descriptions for it.
	os           string
	spotProducts []string
	onDemand     map[string]float64
	odNext       time.Time
	spot         map[string]map[string]float64
	spotNext     time.Time
	spotFetched  bool
}

func newPrices(ec2c *ec2.Client, pc *pricingapi.Client, region string, clk clock.Clock) *prices {
	od := map[string]float64{}
	for name, price := range fallbackOnDemandPrices(region) {
		od[name] = price
	}
	return &prices{ec2: ec2c, pricing: pc, region: region, clock: clk,
		linux: &osPrices{os: "Linux", spotProducts: []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"}, onDemand: od, spot: map[string]map[string]float64{}},
		windows: &osPrices{os: "Windows", spotProducts: []string{"Windows", "Windows (Amazon VPC)"}, onDemand: map[string]float64{},
			spot: map[string]map[string]float64{}}}
}

// needWindows makes the next refresh read Windows prices, and every later one keep them fresh.
func (p *prices) needWindows() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wantWindows = true
}

// refresh re-reads whichever price list is due. Errors are logged, not returned: stale prices
// are better than no prices.
func (p *prices) refresh(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refreshOS(ctx, p.linux)
	if p.wantWindows {
		p.refreshOS(ctx, p.windows)
	}
}

func (p *prices) refreshOS(ctx context.Context, t *osPrices) {
	now := p.clock.Now()
	logger := klog.FromContext(ctx)
	if !now.Before(t.odNext) {
		od, err := p.fetchOnDemand(ctx, t.os)
		if err != nil {
			logger.Error(err, "refreshing on-demand prices; keeping the previous ones", "region", p.region, "operatingSystem", t.os)
			t.odNext = now.Add(retryFailedRefreshAfter)
		} else {
			changed := false
			for k, v := range od {
				if old, ok := t.onDemand[k]; !ok || old != v {
					t.onDemand[k], changed = v, true
				}
			}
			if changed {
				p.version++
			}
			t.odNext = now.Add(CatalogRefreshInterval)
		}
	}
	if !now.Before(t.spotNext) {
		spot, err := p.fetchSpot(ctx, t.spotProducts)
		if err != nil {
			logger.Error(err, "refreshing spot prices; keeping the previous ones", "region", p.region, "operatingSystem", t.os)
			t.spotNext = now.Add(retryFailedRefreshAfter)
		} else {
			changed := !t.spotFetched
			for it, zones := range spot {
				if t.spot[it] == nil {
					t.spot[it] = map[string]float64{}
				}
				for z, v := range zones {
					if old, ok := t.spot[it][z]; !ok || old != v {
						t.spot[it][z], changed = v, true
					}
				}
			}
			t.spotFetched, t.spotNext = true, now.Add(CatalogRefreshInterval)
			if changed {
				p.version++
			}
		}
	}
}

// pricesVersion changes whenever a refresh has changed a price.
func (p *prices) pricesVersion() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.version
}

// onDemandPrice is the hourly Linux price, and false for a type nobody priced.
func (p *prices) onDemandPrice(instanceType string) (float64, bool) {
	return p.onDemandPriceFor(false, instanceType)
}

// spotPrice is the zone's Linux spot price; see spotPriceFor.
func (p *prices) spotPrice(instanceType, zone string) (float64, bool) {
	return p.spotPriceFor(false, instanceType, zone)
}

// onDemandPriceFor is the hourly price on Windows or Linux. Until Windows prices were read, the
// Linux price stands in, as Karpenter prices every instance (a lower bound, but an order).
func (p *prices) onDemandPriceFor(windows bool, instanceType string) (float64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if windows {
		if v, ok := p.windows.onDemand[instanceType]; ok {
			return v, true
		}
	}
	v, ok := p.linux.onDemand[instanceType]
	return v, ok
}

// spotPriceFor is the zone's spot price on Windows or Linux. Until spot prices were read once,
// the on-demand price stands in (an upper bound); afterwards a (type, zone) without a price has
// none.
func (p *prices) spotPriceFor(windows bool, instanceType, zone string) (float64, bool) {
	p.mu.Lock()
	t := p.linux
	if windows && p.windows.spotFetched {
		t = p.windows
	}
	if !t.spotFetched {
		p.mu.Unlock()
		return p.onDemandPriceFor(windows, instanceType)
	}
	defer p.mu.Unlock()
	v, ok := t.spot[instanceType][zone]
	return v, ok
}

// fetchOnDemand reads one operating system's on-demand prices in two listings, as EC2's price
// list files them: virtualised types (shared tenancy) and bare metal (dedicated tenancy, a
// product family of its own). Each must answer, or the refresh fails and the previous prices stay.
func (p *prices) fetchOnDemand(ctx context.Context, os string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, listing := range []struct{ tenancy, productFamily string }{
		{"Shared", "Compute Instance"}, {"Dedicated", "Compute Instance (bare metal)"},
	} {
		filters := map[string]string{
			"regionCode": p.region, "serviceCode": "AmazonEC2", "preInstalledSw": "NA", "operatingSystem": os,
			"capacitystatus": "Used", "marketoption": "OnDemand", "tenancy": listing.tenancy, "productFamily": listing.productFamily,
		}
		in := &pricingapi.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), MaxResults: aws.Int32(100)}
		for _, field := range sortedKeys(filters) {
			in.Filters = append(in.Filters, pricingtypes.Filter{Field: aws.String(field), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String(filters[field])})
		}
		found := 0
		for pg := pricingapi.NewGetProductsPaginator(p.pricing, in); pg.HasMorePages(); {
			page, err := pg.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("pricing GetProducts (%s): %w", listing.productFamily, err)
			}
			for _, doc := range page.PriceList {
				name, price, err := parseProduct(doc)
				if err != nil {
					return nil, err
				}
				if name != "" {
					out[name] = price
					found++
				}
			}
		}
		if found == 0 {
			return nil, fmt.Errorf("pricing GetProducts returned no %s EC2 products of family %q for %s", os, listing.productFamily, p.region)
		}
	}
	return out, nil
}

type priceListProduct struct {
	Product struct {
		Attributes struct {
			InstanceType string `json:"instanceType"`
		} `json:"attributes"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// parseProduct reads one price-list document: the instance type and its USD hourly price.
func parseProduct(doc string) (string, float64, error) {
	var p priceListProduct
	if err := json.Unmarshal([]byte(doc), &p); err != nil {
		return "", 0, fmt.Errorf("decoding price list entry: %w", err)
	}
	for _, term := range p.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			usd, ok := dim.PricePerUnit["USD"]
			if !ok {
				continue
			}
			price, err := strconv.ParseFloat(usd, 64)
			if err != nil {
				return "", 0, fmt.Errorf("price %q of %s: %w", usd, p.Product.Attributes.InstanceType, err)
			}
			if price > 0 {
				return p.Product.Attributes.InstanceType, price, nil
			}
		}
	}
	return "", 0, nil
}

// fetchSpot reads the latest spot price of every (type, zone) for the product descriptions.
func (p *prices) fetchSpot(ctx context.Context, products []string) (map[string]map[string]float64, error) {
	out := map[string]map[string]float64{}
	latest := map[string]time.Time{}
	pg := ec2.NewDescribeSpotPriceHistoryPaginator(p.ec2, &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: products,
		StartTime:           aws.Time(p.clock.Now()),
		MaxResults:          aws.Int32(1000),
	})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing spot price history: %w", err)
		}
		for _, sp := range page.SpotPriceHistory {
			it, zone := string(sp.InstanceType), aws.ToString(sp.AvailabilityZone)
			price, err := strconv.ParseFloat(aws.ToString(sp.SpotPrice), 64)
			if err != nil {
				continue
			}
			key := it + "/" + zone
			if ts := aws.ToTime(sp.Timestamp); !ts.Before(latest[key]) {
				latest[key] = ts
				if out[it] == nil {
					out[it] = map[string]float64{}
				}
				out[it][zone] = price
			}
		}
	}
	return out, nil
}
