package aws

import (
	"encoding/json"
	"hash/fnv"
	"sort"
	"strconv"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
)

// NodeClassHashVersion versions how NodeClassHash is computed. A NodeClaim stamped with another
// version is not judged drifted by the hash, so changing the computation cannot roll the fleet.
const NodeClassHashVersion = "tailor-v1"

// NodeClassHash is the static hash of what an EC2NodeClass's instances are launched with and
// cannot pick up later: user data, tags, instance profile, disks, metadata options, kubelet
// settings and so on. Selector terms are left out on purpose, because what they select is
// checked against the running instance instead (AMI, subnet and security group drift), and a
// re-worded selector that selects the same things must not replace nodes.
func NodeClassHash(nc *awsv1.EC2NodeClass) string {
	spec := nc.Spec.DeepCopy()
	spec.SubnetSelectorTerms = nil
	spec.SecurityGroupSelectorTerms = nil
	spec.CapacityReservationSelectorTerms = nil
	spec.AMISelectorTerms = nil
	spec.AMIFamily = nil
	// Order of block device mappings does not change the instance.
	sort.SliceStable(spec.BlockDeviceMappings, func(i, j int) bool {
		return deref(spec.BlockDeviceMappings[i].DeviceName) < deref(spec.BlockDeviceMappings[j].DeviceName)
	})
	// JSON writes map keys sorted and omits empty fields, so equal specs give equal bytes, and
	// the family is resolved so that spelling out the alias's own family is not a change.
	doc, err := json.Marshal(struct {
		Spec   *awsv1.EC2NodeClassSpec `json:"spec"`
		Family string                  `json:"family"`
	}{spec, nc.AMIFamily()})
	if err != nil {
		// Every field of the spec marshals; this is unreachable, and "" never equals a real hash.
		return ""
	}
	h := fnv.New64a()
	_, _ = h.Write(doc)
	return strconv.FormatUint(h.Sum64(), 10)
}
