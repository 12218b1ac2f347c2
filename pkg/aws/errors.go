package aws

import (
	"errors"
	"sort"

	"github.com/aws/smithy-go"
	"k8s.io/apimachinery/pkg/util/sets"
)

// unfulfillableCapacityCodes are CreateFleet errors that mean "this offering cannot be had right
// now", as opposed to a mistake in the request: the offering is avoided for a while and the
// launch falls back to others.
var unfulfillableCapacityCodes = sets.New(
	"InsufficientInstanceCapacity",
	"MaxSpotInstanceCountExceeded",
	"VcpuLimitExceeded",
	"UnfulfillableCapacity",
	"Unsupported",
	"InsufficientFreeAddressesInSubnet",
	"MaxFleetCountExceeded",
	"ReservationCapacityExceeded",
)

// errorCode is the AWS error code of err (an API error, or an error in a CreateFleet
// response), or "".
func errorCode(err error) string {
	var ae interface{ ErrorCode() string }
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

var _ interface{ ErrorCode() string } = smithy.APIError(nil)

func isNotFound(err error) bool {
	switch errorCode(err) {
	case "InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed":
		return true
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
