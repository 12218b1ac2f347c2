package fake

import (
	"fmt"
	"regexp"
)

// Zone is an availability zone: its name, which differs between accounts for the same place, and
// its zone ID, which does not.
type Zone struct{ Name, ID string }

// regionPattern is the shape of every AWS region name: a two-letter area, an optional partition
// marker (gov, iso, isob...), a direction and a number, e.g. us-east-1, us-gov-west-1,
// ap-southeast-4.
var regionPattern = regexp.MustCompile(`^([a-z]{2})-(?:(gov|iso[a-z]?)-)?(north|south|east|west|central|northeast|northwest|southeast|southwest)-([1-9][0-9]?)$`)

// zoneLetters lists the zones of regions that do not simply have a, b and c. SIMULATED: the
// letters are the ones open to new accounts on the public AWS pages, trimmed to at most three.
var zoneLetters = map[string][]string{
	"us-west-1":      {"b", "c"}, // new accounts get 1b and 1c only
	"ap-northeast-1": {"a", "c", "d"},
}

// directionCodes abbreviate a region's direction in its zone IDs (ap-northeast-1 is apne1).
var directionCodes = map[string]string{"north": "n", "south": "s", "east": "e", "west": "w", "central": "c",
	"northeast": "ne", "northwest": "nw", "southeast": "se", "southwest": "sw"}

// regionLocations are the Pricing API's location names of common regions; others use the code.
var regionLocations = map[string]string{
	"us-east-1": "US East (N. Virginia)", "us-east-2": "US East (Ohio)", "us-west-1": "US West (N. California)",
	"us-west-2": "US West (Oregon)", "eu-west-1": "EU (Ireland)", "eu-central-1": "EU (Frankfurt)",
	"ap-northeast-1": "Asia Pacific (Tokyo)", "ap-southeast-1": "Asia Pacific (Singapore)",
}

// CheckRegion refuses a name that is not shaped like an AWS region, so that a typo in a flag is
// named at start rather than found as an unreachable endpoint once the first call is made.
func CheckRegion(region string) error {
	if !regionPattern.MatchString(region) {
		return fmt.Errorf("region %q is not an AWS region name (like us-east-1 or eu-west-1)", region)
	}
	return nil
}

// RegionZones returns the SIMULATED zones of an AWS region, with zone IDs in AWS's form: the
// region's short code and azN (us-east-1a is use1-az1 here; on AWS the letter-to-ID mapping
// varies by account). Regions not listed in zoneLetters get zones a, b and c. A name that is
// not shaped like an AWS region is an error, so a typo does not become a region.
func RegionZones(region string) ([]Zone, error) {
	if err := CheckRegion(region); err != nil {
		return nil, err
	}
	m := regionPattern.FindStringSubmatch(region)
	code := m[1]
	if m[2] != "" {
		code += m[2][:1] // us-gov-west-1 is usgw1
	}
	code += directionCodes[m[3]]
	code += m[4]
	letters, ok := zoneLetters[region]
	if !ok {
		letters = []string{"a", "b", "c"}
	}
	zones := make([]Zone, len(letters))
	for i, l := range letters {
		zones[i] = Zone{Name: region + l, ID: fmt.Sprintf("%s-az%d", code, i+1)}
	}
	return zones, nil
}

// RegionLocation is the region's name in the Pricing API's "location" attribute.
func RegionLocation(region string) string {
	if l, ok := regionLocations[region]; ok {
		return l
	}
	return region
}

// ZoneNames lists the names of the zones.
func ZoneNames(zones []Zone) []string {
	out := make([]string, len(zones))
	for i, z := range zones {
		out[i] = z.Name
	}
	return out
}
