package emulator

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

type getParameterInput struct {
	Name string `json:"Name"`
}

type parameterJSON struct {
	Name             string  `json:"Name"`
	Type             string  `json:"Type"`
	Value            string  `json:"Value"`
	Version          int64   `json:"Version"`
	DataType         string  `json:"DataType"`
	ARN              string  `json:"ARN"`
	LastModifiedDate float64 `json:"LastModifiedDate"`
}

func (e *Emulator) ssm(action string, body []byte) (any, error) {
	if action != "GetParameter" {
		return nil, &apiError{Code: "UnknownOperationException", Message: "the AWS emulator does not serve SSM " + action}
	}
	var in getParameterInput
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, &apiError{Code: "SerializationException", Message: err.Error()}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	value, ok := e.world.parameters[in.Name]
	if !ok {
		return nil, &apiError{Code: "ParameterNotFound", Message: fmt.Sprintf("Parameter %s not found.", in.Name)}
	}
	return map[string]any{"Parameter": parameterJSON{Name: in.Name, Type: "String", Value: value, Version: 1,
		DataType: "aws:ec2:image", ARN: "arn:aws:ssm:" + e.region + "::parameter" + in.Name,
		LastModifiedDate: float64(e.clock.Now().Unix())}}, nil
}

type getProductsInput struct {
	ServiceCode string `json:"ServiceCode"`
	Filters     []struct {
		Field string `json:"Field"`
		Type  string `json:"Type"`
		Value string `json:"Value"`
	} `json:"Filters"`
	MaxResults int    `json:"MaxResults"`
	NextToken  string `json:"NextToken"`
}

// pricing serves GetProducts over the catalog's on-demand prices (EC2's published Linux price
// of the region where the snapshot has its list, else the snapshot's rule; Windows by the
// licence rule): one Linux and one Windows product per instance type in the emulator's region
// (shared tenancy, or dedicated for bare metal), in the price-list JSON EC2's has. The SKUs are
// SIMULATED.
func (e *Emulator) pricing(action string, body []byte) (any, error) {
	if action != "GetProducts" {
		return nil, &apiError{Code: "UnknownOperationException", Message: "the AWS emulator does not serve Pricing " + action}
	}
	var in getProductsInput
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, &apiError{Code: "SerializationException", Message: err.Error()}
	}
	if in.ServiceCode != "AmazonEC2" {
		return nil, &apiError{Code: "InvalidParameterException", Message: "the AWS emulator prices only AmazonEC2"}
	}
	matching, err := e.matchingProducts(in)
	if err != nil {
		return nil, err
	}
	items, next, err := page(matching, in.MaxResults, in.NextToken, e.catalogPageCap())
	if err != nil {
		return nil, err
	}
	out := map[string]any{"FormatVersion": "aws_v1", "PriceList": items}
	if next != "" {
		out["NextToken"] = next
	}
	return out, nil
}

func productJSON(it *instanceTypeInfo, attrs map[string]string, price float64) map[string]any {
	sku := "SIM" + strings.ToUpper(strings.NewReplacer(".", "", "-", "").Replace(it.InstanceType)+attrs["operatingSystem"][:3])
	term := sku + ".JRTCKXETXF"
	productAttrs := map[string]string{}
	for k, v := range attrs {
		if k != "productFamily" {
			productAttrs[k] = v
		}
	}
	return map[string]any{
		"product":     map[string]any{"productFamily": attrs["productFamily"], "attributes": productAttrs, "sku": sku},
		"serviceCode": "AmazonEC2",
		"terms": map[string]any{"OnDemand": map[string]any{term: map[string]any{
			"sku": sku, "offerTermCode": "JRTCKXETXF",
			"priceDimensions": map[string]any{term + ".6YS6EN2CT7": map[string]any{
				"unit": "Hrs", "description": fmt.Sprintf("$%s per On Demand %s %s Instance Hour", strconv.FormatFloat(price, 'f', -1, 64), attrs["operatingSystem"], it.InstanceType),
				"pricePerUnit": map[string]string{"USD": strconv.FormatFloat(price, 'f', 10, 64)},
			}},
		}}},
	}
}
