package emulator

import (
	"strconv"
)

type subnetXML struct {
	SubnetID                string   `xml:"subnetId"`
	State                   string   `xml:"state"`
	VpcID                   string   `xml:"vpcId"`
	CidrBlock               string   `xml:"cidrBlock"`
	AvailableIPAddressCount int64    `xml:"availableIpAddressCount"`
	AvailabilityZone        string   `xml:"availabilityZone"`
	AvailabilityZoneID      string   `xml:"availabilityZoneId"`
	MapPublicIPOnLaunch     bool     `xml:"mapPublicIpOnLaunch"`
	Tags                    []tagXML `xml:"tagSet>item"`
}

type describeSubnetsOutput struct {
	ec2Output
	Subnets   []subnetXML `xml:"subnetSet>item"`
	NextToken string      `xml:"nextToken,omitempty"`
}

func (e *Emulator) describeSubnets(q query) (ec2Response, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	items, err := byIDs(q, "SubnetId", e.world.subnets, func(s *Subnet) string { return s.ID }, "InvalidSubnetID.NotFound")
	if err != nil {
		return nil, err
	}
	items, err = filterSlice(items, parseFilters(q), func(s *Subnet) attributes {
		return func(name string) ([]string, bool) {
			switch name {
			case "subnet-id":
				return []string{s.ID}, true
			case "availability-zone":
				return []string{s.Zone}, true
			case "availability-zone-id":
				return []string{e.zoneID(s.Zone)}, true
			case "vpc-id":
				return []string{VPCID}, true
			case "state":
				return []string{"available"}, true
			}
			return tagAttributes(s.Tags, name)
		}
	})
	if err != nil {
		return nil, err
	}
	items, next, err := pageOf(e, q, items, 0)
	if err != nil {
		return nil, err
	}
	out := &describeSubnetsOutput{NextToken: next}
	for _, s := range items {
		out.Subnets = append(out.Subnets, subnetXML{SubnetID: s.ID, State: "available", VpcID: VPCID, CidrBlock: s.CIDR,
			AvailableIPAddressCount: s.AvailableIPs, AvailabilityZone: s.Zone, AvailabilityZoneID: e.zoneID(s.Zone), Tags: tagsXML(s.Tags)})
	}
	return out, nil
}

type securityGroupXML struct {
	GroupID          string   `xml:"groupId"`
	GroupName        string   `xml:"groupName"`
	GroupDescription string   `xml:"groupDescription"`
	VpcID            string   `xml:"vpcId"`
	OwnerID          string   `xml:"ownerId"`
	Tags             []tagXML `xml:"tagSet>item"`
}

type describeSecurityGroupsOutput struct {
	ec2Output
	SecurityGroups []securityGroupXML `xml:"securityGroupInfo>item"`
	NextToken      string             `xml:"nextToken,omitempty"`
}

func (e *Emulator) describeSecurityGroups(q query) (ec2Response, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	items, err := byIDs(q, "GroupId", e.world.securityGroups, func(s *SecurityGroup) string { return s.ID }, "InvalidGroup.NotFound")
	if err != nil {
		return nil, err
	}
	if names := q.list("GroupName"); len(names) > 0 {
		items, err = byIDs(q, "GroupName", items, func(s *SecurityGroup) string { return s.Name }, "InvalidGroup.NotFound")
		if err != nil {
			return nil, err
		}
	}
	items, err = filterSlice(items, parseFilters(q), func(s *SecurityGroup) attributes {
		return func(name string) ([]string, bool) {
			switch name {
			case "group-id":
				return []string{s.ID}, true
			case "group-name":
				return []string{s.Name}, true
			case "vpc-id":
				return []string{VPCID}, true
			}
			return tagAttributes(s.Tags, name)
		}
	})
	if err != nil {
		return nil, err
	}
	items, next, err := pageOf(e, q, items, 0)
	if err != nil {
		return nil, err
	}
	out := &describeSecurityGroupsOutput{NextToken: next}
	for _, s := range items {
		out.SecurityGroups = append(out.SecurityGroups, securityGroupXML{GroupID: s.ID, GroupName: s.Name,
			GroupDescription: s.Name, VpcID: VPCID, OwnerID: AccountID, Tags: tagsXML(s.Tags)})
	}
	return out, nil
}

type imageXML struct {
	ImageID         string   `xml:"imageId"`
	Name            string   `xml:"name"`
	ImageState      string   `xml:"imageState"`
	OwnerID         string   `xml:"imageOwnerId"`
	OwnerAlias      string   `xml:"imageOwnerAlias,omitempty"`
	Architecture    string   `xml:"architecture"`
	CreationDate    string   `xml:"creationDate"`
	DeprecationTime string   `xml:"deprecationTime,omitempty"`
	ImageType       string   `xml:"imageType"`
	RootDeviceType  string   `xml:"rootDeviceType"`
	VirtualizationT string   `xml:"virtualizationType"`
	Tags            []tagXML `xml:"tagSet>item"`
}

type describeImagesOutput struct {
	ec2Output
	Images    []imageXML `xml:"imagesSet>item"`
	NextToken string     `xml:"nextToken,omitempty"`
}

// describeImages hides deprecated images unless they are asked for by ID or IncludeDeprecated
// is set, as EC2 does.
func (e *Emulator) describeImages(q query) (ec2Response, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	byID := len(q.list("ImageId")) > 0
	items, err := byIDs(q, "ImageId", e.world.images, func(i *Image) string { return i.ID }, "InvalidAMIID.NotFound")
	if err != nil {
		return nil, err
	}
	includeDeprecated, _ := strconv.ParseBool(q.get("IncludeDeprecated"))
	owners := q.list("Owner")
	var kept []*Image
	for _, img := range items {
		if img.Deprecated && !byID && !includeDeprecated {
			continue
		}
		if len(owners) > 0 && !ownedBy(img, owners) {
			continue
		}
		kept = append(kept, img)
	}
	kept, err = filterSlice(kept, parseFilters(q), func(i *Image) attributes {
		return func(name string) ([]string, bool) {
			switch name {
			case "image-id":
				return []string{i.ID}, true
			case "name":
				return []string{i.Name}, true
			case "architecture":
				return []string{i.Architecture}, true
			case "owner-id":
				return []string{i.OwnerID}, true
			case "owner-alias":
				return []string{i.OwnerAlias}, true
			case "state":
				return []string{"available"}, true
			}
			return tagAttributes(i.Tags, name)
		}
	})
	if err != nil {
		return nil, err
	}
	kept, next, err := pageOf(e, q, kept, 0)
	if err != nil {
		return nil, err
	}
	out := &describeImagesOutput{NextToken: next}
	for _, i := range kept {
		x := imageXML{ImageID: i.ID, Name: i.Name, ImageState: "available", OwnerID: i.OwnerID, OwnerAlias: i.OwnerAlias,
			Architecture: i.Architecture, CreationDate: ec2Time(i.Created), ImageType: "machine", RootDeviceType: "ebs",
			VirtualizationT: "hvm", Tags: tagsXML(i.Tags)}
		if i.Deprecated {
			x.DeprecationTime = ec2Time(i.Created)
		}
		out.Images = append(out.Images, x)
	}
	return out, nil
}

func ownedBy(img *Image, owners []string) bool {
	for _, o := range owners {
		if o == img.OwnerID || o == img.OwnerAlias || (o == "self" && img.OwnerID == AccountID) {
			return true
		}
	}
	return false
}
