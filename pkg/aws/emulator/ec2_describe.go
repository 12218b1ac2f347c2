package emulator

import (
	"net/http"
	"strconv"
	"strings"
)

func (e *Emulator) serveEC2(w http.ResponseWriter, reqID, action string, q query) {
	handlers := map[string]func(query) (ec2Response, error){
		"DescribeInstanceTypes":          e.describeInstanceTypes,
		"DescribeInstanceTypeOfferings":  e.describeInstanceTypeOfferings,
		"DescribeSpotPriceHistory":       e.describeSpotPriceHistory,
		"DescribeSubnets":                e.describeSubnets,
		"DescribeSecurityGroups":         e.describeSecurityGroups,
		"DescribeImages":                 e.describeImages,
		"CreateLaunchTemplate":           e.createLaunchTemplate,
		"DescribeLaunchTemplates":        e.describeLaunchTemplates,
		"DescribeLaunchTemplateVersions": e.describeLaunchTemplateVersions,
		"DeleteLaunchTemplate":           e.deleteLaunchTemplate,
		"CreateFleet":                    e.createFleet,
		"DescribeInstances":              e.describeInstances,
		"TerminateInstances":             e.terminateInstances,
		"DescribeCapacityReservations":   e.describeCapacityReservations,
	}
	h, ok := handlers[action]
	if !ok {
		writeEC2Error(w, reqID, &apiError{Code: "InvalidAction", Message: "The action " + action + " is not valid for this web service."})
		return
	}
	out, err := h(q)
	if err != nil {
		writeEC2Error(w, reqID, asAPIError(err))
		return
	}
	writeEC2(w, reqID, action, out)
}

// pageOf applies MaxResults, NextToken and the emulator's page cap.
func pageOf[T any](e *Emulator, q query, items []T, def int) ([]T, string, error) {
	return pageCapped(q, items, def, e.opts.MaxPageSize)
}

// catalogPageOf pages a listing of the catalog (see Options.MaxPageSize).
func catalogPageOf[T any](e *Emulator, q query, items []T, def int) ([]T, string, error) {
	return pageCapped(q, items, def, e.catalogPageCap())
}

func pageCapped[T any](q query, items []T, def, limit int) ([]T, string, error) {
	maxResults, err := q.int("MaxResults", def)
	if err != nil {
		return nil, "", err
	}
	return page(items, maxResults, q.get("NextToken"), limit)
}

type describeInstanceTypesOutput struct {
	ec2Output
	InstanceTypes []*instanceTypeInfo `xml:"instanceTypeSet>item"`
	NextToken     string              `xml:"nextToken,omitempty"`
}

func (e *Emulator) describeInstanceTypes(q query) (ec2Response, error) {
	items := e.catalog
	if names := q.list("InstanceType"); len(names) > 0 {
		items = nil
		var missing []string
		for _, n := range names {
			if it := e.instanceType(n); it != nil {
				items = append(items, it)
			} else {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			return nil, &apiError{Code: "InvalidInstanceType", Message: "The following supplied instance types do not exist: [" + strings.Join(missing, ", ") + "]"}
		}
	}
	items, err := filterSlice(items, parseFilters(q), func(it *instanceTypeInfo) attributes {
		return func(name string) ([]string, bool) {
			switch name {
			case "instance-type":
				return []string{it.InstanceType}, true
			case "processor-info.supported-architecture":
				return it.ProcessorInfo.SupportedArchitectures, true
			case "supported-virtualization-type":
				return it.SupportedVirtualizationTypes, true
			case "current-generation":
				return []string{strconv.FormatBool(it.CurrentGeneration)}, true
			}
			return nil, false
		}
	})
	if err != nil {
		return nil, err
	}
	out := &describeInstanceTypesOutput{}
	out.InstanceTypes, out.NextToken, err = catalogPageOf(e, q, items, 100)
	return out, err
}

type offeringXML struct {
	InstanceType string `xml:"instanceType"`
	LocationType string `xml:"locationType"`
	Location     string `xml:"location"`
}

type describeInstanceTypeOfferingsOutput struct {
	ec2Output
	Offerings []offeringXML `xml:"instanceTypeOfferingSet>item"`
	NextToken string        `xml:"nextToken,omitempty"`
}

// describeInstanceTypeOfferings sells every type in every zone, as the fake cloud does.
func (e *Emulator) describeInstanceTypeOfferings(q query) (ec2Response, error) {
	locationType := q.get("LocationType")
	if locationType == "" {
		locationType = "region"
	}
	var all []offeringXML
	for _, it := range e.catalog {
		switch locationType {
		case "region":
			all = append(all, offeringXML{InstanceType: it.InstanceType, LocationType: locationType, Location: e.region})
		case "availability-zone", "availability-zone-id":
			for _, z := range e.zones {
				loc := z.Name
				if locationType == "availability-zone-id" {
					loc = z.ID
				}
				all = append(all, offeringXML{InstanceType: it.InstanceType, LocationType: locationType, Location: loc})
			}
		default:
			return nil, invalidParameter("LocationType %q is not one of region, availability-zone, availability-zone-id", locationType)
		}
	}
	items, err := filterSlice(all, parseFilters(q), func(o offeringXML) attributes {
		return func(name string) ([]string, bool) {
			switch name {
			case "location":
				return []string{o.Location}, true
			case "instance-type":
				return []string{o.InstanceType}, true
			}
			return nil, false
		}
	})
	if err != nil {
		return nil, err
	}
	out := &describeInstanceTypeOfferingsOutput{}
	out.Offerings, out.NextToken, err = catalogPageOf(e, q, items, 1000)
	return out, err
}

type spotPriceXML struct {
	InstanceType       string `xml:"instanceType"`
	ProductDescription string `xml:"productDescription"`
	SpotPrice          string `xml:"spotPrice"`
	Timestamp          string `xml:"timestamp"`
	AvailabilityZone   string `xml:"availabilityZone"`
}

type describeSpotPriceHistoryOutput struct {
	ec2Output
	Prices    []spotPriceXML `xml:"spotPriceHistorySet>item"`
	NextToken string         `xml:"nextToken,omitempty"`
}

// describeSpotPriceHistory returns the current spot price of every (type, zone): the snapshot's
// rule (pkg/aws/ec2facts.Spot) applied to the region's own on-demand price, SIMULATED as no
// snapshot holds a market. The emulator's prices do not move, so the history is one point long.
func (e *Emulator) describeSpotPriceHistory(q query) (ec2Response, error) {
	// EC2 names the products of a VPC launch with and without " (Amazon VPC)"; the emulator
	// answers under the plain names, which both spellings ask for.
	descs := q.list("ProductDescription")
	types := q.list("InstanceType")
	now := ec2Time(e.clock.Now())
	var all []spotPriceXML
	for _, sys := range []struct{ product, os string }{{"Linux/UNIX", "Linux"}, {"Windows", "Windows"}} {
		product, os := sys.product, sys.os
		if len(descs) > 0 && !contains(descs, product) && !contains(descs, product+" (Amazon VPC)") {
			continue
		}
		for _, it := range e.catalog {
			if len(types) > 0 && !contains(types, it.InstanceType) {
				continue
			}
			for _, z := range e.zones {
				if az := q.get("AvailabilityZone"); az != "" && az != z.Name {
					continue
				}
				price, _ := priceFor(it, os, it.spotPrices[z.Name])
				all = append(all, spotPriceXML{InstanceType: it.InstanceType, ProductDescription: product,
					SpotPrice: strconv.FormatFloat(price, 'f', 6, 64), Timestamp: now, AvailabilityZone: z.Name})
			}
		}
	}
	items, err := filterSlice(all, parseFilters(q), func(p spotPriceXML) attributes {
		return func(name string) ([]string, bool) {
			switch name {
			case "instance-type":
				return []string{p.InstanceType}, true
			case "availability-zone":
				return []string{p.AvailabilityZone}, true
			case "product-description":
				return []string{p.ProductDescription}, true
			}
			return nil, false
		}
	})
	if err != nil {
		return nil, err
	}
	out := &describeSpotPriceHistoryOutput{}
	out.Prices, out.NextToken, err = catalogPageOf(e, q, items, 1000)
	return out, err
}

// byIDs picks items by the IDs listed under key, failing with notFound for an unknown one, as
// EC2 does; with no IDs it returns every item.
func byIDs[T any](q query, key string, items []T, id func(T) string, notFound string) ([]T, error) {
	ids := q.list(key)
	if len(ids) == 0 {
		return items, nil
	}
	var out []T
	for _, want := range ids {
		found := false
		for _, item := range items {
			if id(item) == want {
				out, found = append(out, item), true
				break
			}
		}
		if !found {
			return nil, &apiError{Code: notFound, Message: "The ID '" + want + "' does not exist"}
		}
	}
	return out, nil
}
