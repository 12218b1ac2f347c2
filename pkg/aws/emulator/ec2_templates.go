package emulator

import (
	"encoding/base64"
	"time"
)

// LaunchTemplate is what the emulator keeps of a launch template: what a launch needs.
type LaunchTemplate struct {
	ID, Name         string
	Created          time.Time
	Tags             map[string]string
	ImageID          string
	UserData         string // decoded
	SecurityGroupIDs []string
	InstanceProfile  string
	// Volumes are the EBS block device mappings; kubeletDevice says which holds the kubelet's data.
	Volumes []Volume
	// NetworkInterfaces are the interfaces instances start with; none means EC2's default one.
	NetworkInterfaces []NetworkInterface
	// CapacityReservationID is the reservation the template's instances launch into
	// (CapacityReservationSpecification.CapacityReservationTarget), and
	// CapacityReservationPreference its preference ("none" opts out of open reservations).
	CapacityReservationID, CapacityReservationPreference string
	// MarketType is InstanceMarketOptions.MarketType: "capacity-block" for Capacity Blocks.
	MarketType string
}

// Volume is one EBS block device mapping.
type Volume struct {
	Device    string
	SizeGiB   int64
	Type      string
	Encrypted bool
}

type launchTemplate = LaunchTemplate

type launchTemplateXML struct {
	LaunchTemplateID     string   `xml:"launchTemplateId"`
	LaunchTemplateName   string   `xml:"launchTemplateName"`
	CreateTime           string   `xml:"createTime"`
	CreatedBy            string   `xml:"createdBy"`
	DefaultVersionNumber int64    `xml:"defaultVersionNumber"`
	LatestVersionNumber  int64    `xml:"latestVersionNumber"`
	Tags                 []tagXML `xml:"tagSet>item"`
}

func (lt *LaunchTemplate) xml() launchTemplateXML {
	return launchTemplateXML{LaunchTemplateID: lt.ID, LaunchTemplateName: lt.Name, CreateTime: ec2Time(lt.Created),
		CreatedBy: "arn:aws:iam::" + AccountID + ":role/tailor", DefaultVersionNumber: 1, LatestVersionNumber: 1, Tags: tagsXML(lt.Tags)}
}

type launchTemplateOutput struct {
	ec2Output
	LaunchTemplate launchTemplateXML `xml:"launchTemplate"`
}

func (e *Emulator) createLaunchTemplate(q query) (ec2Response, error) {
	name := q.get("LaunchTemplateName")
	if name == "" {
		return nil, &apiError{Code: "MissingParameter", Message: "The request must contain the parameter LaunchTemplateName"}
	}
	data := q.sub("LaunchTemplateData")
	userData, err := base64.StdEncoding.DecodeString(data.get("UserData"))
	if err != nil {
		return nil, &apiError{Code: "InvalidUserData.Malformed", Message: "User data must be base64 encoded: " + err.Error()}
	}
	nics, err := parseNetworkInterfaces(data)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.launchTemplateByName(name) != nil {
		return nil, &apiError{Code: "InvalidLaunchTemplateName.AlreadyExistsException",
			Message: "Launch template name already in use."}
	}
	lt := &LaunchTemplate{
		ID: e.newID("lt"), Name: name, Created: e.clock.Now(), Tags: tagSpecs(q, "TagSpecification")["launch-template"],
		ImageID: data.get("ImageId"), UserData: string(userData), SecurityGroupIDs: data.list("SecurityGroupId"),
		InstanceProfile: data.get("IamInstanceProfile.Name"), NetworkInterfaces: nics,
		CapacityReservationID:         data.get("CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId"),
		CapacityReservationPreference: data.get("CapacityReservationSpecification.CapacityReservationPreference"),
		MarketType:                    data.get("InstanceMarketOptions.MarketType"),
	}
	for _, bdm := range data.items("BlockDeviceMapping") {
		size, err := bdm.int("Ebs.VolumeSize", 0)
		if err != nil {
			return nil, err
		}
		lt.Volumes = append(lt.Volumes, Volume{Device: bdm.get("DeviceName"), SizeGiB: int64(size),
			Type: bdm.get("Ebs.VolumeType"), Encrypted: bdm.get("Ebs.Encrypted") == "true"})
	}
	e.world.launchTemplates = append(e.world.launchTemplates, lt)
	return &launchTemplateOutput{LaunchTemplate: lt.xml()}, nil
}

type describeLaunchTemplatesOutput struct {
	ec2Output
	LaunchTemplates []launchTemplateXML `xml:"launchTemplates>item"`
	NextToken       string              `xml:"nextToken,omitempty"`
}

func (e *Emulator) describeLaunchTemplates(q query) (ec2Response, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	items, err := byIDs(q, "LaunchTemplateName", e.world.launchTemplates, func(lt *LaunchTemplate) string { return lt.Name },
		"InvalidLaunchTemplateName.NotFoundException")
	if err != nil {
		return nil, err
	}
	items, err = byIDs(q, "LaunchTemplateId", items, func(lt *LaunchTemplate) string { return lt.ID }, "InvalidLaunchTemplateId.NotFound")
	if err != nil {
		return nil, err
	}
	items, err = filterSlice(items, parseFilters(q), func(lt *LaunchTemplate) attributes {
		return func(name string) ([]string, bool) {
			if name == "launch-template-name" {
				return []string{lt.Name}, true
			}
			return tagAttributes(lt.Tags, name)
		}
	})
	if err != nil {
		return nil, err
	}
	items, next, err := pageOf(e, q, items, 0)
	if err != nil {
		return nil, err
	}
	out := &describeLaunchTemplatesOutput{NextToken: next}
	for _, lt := range items {
		out.LaunchTemplates = append(out.LaunchTemplates, lt.xml())
	}
	return out, nil
}

func (e *Emulator) deleteLaunchTemplate(q query) (ec2Response, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, lt := range e.world.launchTemplates {
		if (q.get("LaunchTemplateName") != "" && lt.Name == q.get("LaunchTemplateName")) ||
			(q.get("LaunchTemplateId") != "" && lt.ID == q.get("LaunchTemplateId")) {
			e.world.launchTemplates = append(e.world.launchTemplates[:i], e.world.launchTemplates[i+1:]...)
			return &launchTemplateOutput{LaunchTemplate: lt.xml()}, nil
		}
	}
	if q.get("LaunchTemplateId") != "" {
		return nil, &apiError{Code: "InvalidLaunchTemplateId.NotFound", Message: "The specified launch template, with template ID " + q.get("LaunchTemplateId") + ", does not exist."}
	}
	return nil, &apiError{Code: "InvalidLaunchTemplateName.NotFoundException", Message: "The specified launch template, with template name " + q.get("LaunchTemplateName") + ", does not exist."}
}

// launchTemplateByName returns the template or nil. Callers hold e.mu.
func (e *Emulator) launchTemplateByName(name string) *LaunchTemplate {
	for _, lt := range e.world.launchTemplates {
		if lt.Name == name {
			return lt
		}
	}
	return nil
}

// LaunchTemplates returns copies of the launch templates, in creation order.
func (e *Emulator) LaunchTemplates() []LaunchTemplate {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]LaunchTemplate, 0, len(e.world.launchTemplates))
	for _, lt := range e.world.launchTemplates {
		c := *lt
		c.Tags = copyTags(lt.Tags)
		c.SecurityGroupIDs = append([]string(nil), lt.SecurityGroupIDs...)
		c.Volumes = append([]Volume(nil), lt.Volumes...)
		c.NetworkInterfaces = copyInterfaces(lt.NetworkInterfaces)
		out = append(out, c)
	}
	return out
}
