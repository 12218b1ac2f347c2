package aws

import "fmt"

// Built-in on-demand prices, used from start-up until the Pricing API answers (or when it cannot
// be reached at all). They are us-east-1 Linux shared-tenancy list prices in USD per hour, as
// published by AWS in 2025, for the families common in Kubernetes fleets; within these families
// the price is proportional to vCPUs. Other regions differ by a few percent, which is close enough
// to rank offerings until real prices arrive. Types not listed have no price (and so no available
// offering) until the API answers.
var fallbackPerVCPU = map[string]float64{
	"c5": 0.0425, "c6i": 0.0425, "c6g": 0.034, "c7i": 0.044625, "c7g": 0.03625,
	"m5": 0.048, "m6i": 0.048, "m6g": 0.0385, "m7i": 0.0504, "m7g": 0.0408,
	"r5": 0.063, "r6i": 0.063, "r6g": 0.0504, "r7i": 0.06615, "r7g": 0.05355,
	"t3": 0.0416, "t4g": 0.0336,
}

// GPU prices are not proportional to vCPUs, so they are listed per type.
var fallbackPerType = map[string]float64{
	"g5.xlarge": 1.006, "g5.2xlarge": 1.212, "g5.4xlarge": 1.624, "g5.8xlarge": 2.448,
	"g5.12xlarge": 5.672, "g5.16xlarge": 4.096, "g5.24xlarge": 8.144,
}

var fallbackSizes = map[string]int{"large": 2, "xlarge": 4, "2xlarge": 8, "4xlarge": 16, "8xlarge": 32, "12xlarge": 48, "16xlarge": 64, "24xlarge": 96}

func fallbackOnDemandPrices() map[string]float64 {
	out := map[string]float64{}
	for family, perVCPU := range fallbackPerVCPU {
		for size, vcpus := range fallbackSizes {
			out[fmt.Sprintf("%s.%s", family, size)] = perVCPU * float64(vcpus)
		}
	}
	for name, price := range fallbackPerType {
		out[name] = price
	}
	return out
}
