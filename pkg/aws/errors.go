package aws

import (
	"errors"
	"sort"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/tailor-sh/tailor/pkg/aws/awserr"
	"github.com/tailor-sh/tailor/pkg/cloud"
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

// permanentLaunchCodes are EC2 errors that launching the same request again cannot fix: the
// request is malformed or names something that does not exist, or the caller may not make it.
// A launch that meets one holds its NodePool back (cloud.LaunchBackoff) instead of replacing the
// NodeClaim at once. Capacity errors (above) are per offering and handled by falling back;
// throttling and server errors are retried by the SDK.
var permanentLaunchCodes = sets.New(
	"InvalidParameterValue",
	"InvalidParameterCombination",
	"InvalidParameter",
	"MissingParameter",
	"InvalidAMIID.NotFound",
	"InvalidAMIID.Malformed",
	"InvalidAMIID.Unavailable",
	"InvalidUserData.Malformed",
	"InvalidBlockDeviceMapping",
	"InvalidSubnetID.NotFound",
	"InvalidGroup.NotFound",
	"InvalidSecurityGroupID.NotFound",
	"InvalidKeyPair.NotFound",
	"InvalidLaunchTemplateName.MalformedException",
	"UnauthorizedOperation",
	"AuthFailure",
	"OptInRequired",
	"Blocked",
	"PendingVerification",
)

// classifyLaunch marks err permanent when its code says retrying cannot help.
func classifyLaunch(err error) error {
	if err == nil {
		return nil
	}
	if code := awserr.Code(err); permanentLaunchCodes.Has(code) {
		msg := err.Error()
		var ae interface{ ErrorMessage() string }
		if errors.As(err, &ae) {
			msg = ae.ErrorMessage()
		}
		return &cloud.PermanentLaunchError{Code: code, Message: msg, Err: err}
	}
	return err
}

func isNotFound(err error) bool {
	switch awserr.Code(err) {
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
