package emulator

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// priceProduct is one product of the emulated price list: its attributes, keys and values in
// lower case (GetProducts matches a filter's field and value without regard to case), and its
// document.
type priceProduct struct {
	attrs map[string]string
	doc   string
}

// matches says whether the product meets every filter, each a TERM_MATCH in lower case
// (lowerFilters).
func (p *priceProduct) matches(filters []termFilter) bool {
	for _, f := range filters {
		if v, ok := p.attrs[f.field]; !ok || v != f.value {
			return false
		}
	}
	return true
}

type termFilter struct{ field, value string }

// lowerFilters are in's filters, fields and values in lower case; false if one is not a
// TERM_MATCH, which no product meets.
func lowerFilters(in getProductsInput) ([]termFilter, bool) {
	out := make([]termFilter, 0, len(in.Filters))
	for _, f := range in.Filters {
		if f.Type != "TERM_MATCH" {
			return nil, false
		}
		out = append(out, termFilter{strings.ToLower(f.Field), strings.ToLower(f.Value)})
	}
	return out, true
}

// priceLists holds each region's price list, Linux then Windows, built on the first GetProducts
// of any emulator of the region and kept: the catalog and its prices are a function of the
// region alone (buildCatalog) and never change, and a reader pages through thousands of
// products a call at a time, which rebuilt every product per page. An option that changed an
// emulator's catalog or prices would have to key this by it.
var priceLists sync.Map // region → *priceList

type priceList struct {
	once  sync.Once
	items []priceProduct
	err   error
	// matched holds the documents each set of filters matches: a reader asks the same filters
	// for every page.
	matched sync.Map // filters' key → []string
}

// matching are the documents of the products that meet in's filters.
func (l *priceList) matching(in getProductsInput) []string {
	filters, ok := lowerFilters(in)
	if !ok {
		return nil
	}
	var key strings.Builder
	for _, f := range filters {
		key.WriteString(f.field + "\x00" + f.value + "\x00")
	}
	if docs, ok := l.matched.Load(key.String()); ok {
		return docs.([]string)
	}
	docs := []string{} // an answer with no product lists none, as EC2's does, not null
	for i := range l.items {
		if l.items[i].matches(filters) {
			docs = append(docs, l.items[i].doc)
		}
	}
	l.matched.Store(key.String(), docs)
	return docs
}

// matchingProducts are the documents of the region's products that meet in's filters.
func (e *Emulator) matchingProducts(in getProductsInput) ([]string, error) {
	v, _ := priceLists.LoadOrStore(e.region, &priceList{})
	l := v.(*priceList)
	l.once.Do(func() {
		for _, os := range []string{"Linux", "Windows"} {
			for _, it := range e.catalog {
				p, err := newPriceProduct(it, os, e.region)
				if err != nil {
					l.err = err
					return
				}
				l.items = append(l.items, p)
			}
		}
	})
	if l.err != nil {
		return nil, l.err
	}
	return l.matching(in), nil
}

func newPriceProduct(it *instanceTypeInfo, os, region string) (priceProduct, error) {
	attrs := map[string]string{
		"servicecode": "AmazonEC2", "instanceType": it.InstanceType, "regionCode": region, "location": fake.RegionLocation(region),
		"operatingSystem": os, "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used",
		"marketoption": "OnDemand", "productFamily": "Compute Instance",
		"vcpu": strconv.FormatInt(it.VCPUInfo.DefaultVCPUs, 10), "memory": fmt.Sprintf("%d GiB", it.MemoryInfo.SizeInMiB/1024),
	}
	// EC2's price list files bare metal under a product family of its own, at dedicated
	// tenancy (the whole host is the customer's).
	if it.BareMetal {
		attrs["productFamily"], attrs["tenancy"] = "Compute Instance (bare metal)", "Dedicated"
	}
	price, _ := priceFor(it, os, it.onDemandPrice)
	doc, err := json.Marshal(productJSON(it, attrs, price))
	if err != nil {
		return priceProduct{}, err
	}
	lower := make(map[string]string, len(attrs))
	for k, v := range attrs {
		lower[strings.ToLower(k)] = strings.ToLower(v)
	}
	return priceProduct{attrs: lower, doc: string(doc)}, nil
}
