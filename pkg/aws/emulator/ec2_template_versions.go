package emulator

import (
	"encoding/base64"
	"strconv"
)

// The emulator keeps one version of each launch template (Tailor never edits one: a different
// spec is a different template), so every version selector names that version.

type launchTemplateVersionXML struct {
	LaunchTemplateID   string                `xml:"launchTemplateId"`
	LaunchTemplateName string                `xml:"launchTemplateName"`
	VersionNumber      int64                 `xml:"versionNumber"`
	DefaultVersion     bool                  `xml:"defaultVersion"`
	CreateTime         string                `xml:"createTime"`
	Data               launchTemplateDataXML `xml:"launchTemplateData"`
	Tags               []tagXML              `xml:"tagSet>item,omitempty"`
}

type launchTemplateDataXML struct {
	ImageID            string                `xml:"imageId,omitempty"`
	UserData           string                `xml:"userData,omitempty"`
	SecurityGroupIDs   []string              `xml:"securityGroupIdSet>item,omitempty"`
	IamInstanceProfile *instanceProfileXML   `xml:"iamInstanceProfile,omitempty"`
	NetworkInterfaces  []networkInterfaceXML `xml:"networkInterfaceSet>item,omitempty"`
	BlockDevices       []blockDeviceXML      `xml:"blockDeviceMappingSet>item,omitempty"`
	Reservation        *reservationSpecXML   `xml:"capacityReservationSpecification,omitempty"`
	MarketType         string                `xml:"instanceMarketOptions>marketType,omitempty"`
}

type reservationSpecXML struct {
	Preference    string `xml:"capacityReservationPreference,omitempty"`
	ReservationID string `xml:"capacityReservationTarget>capacityReservationId,omitempty"`
}

type instanceProfileXML struct {
	Name string `xml:"name"`
}

type networkInterfaceXML struct {
	AssociatePublicIPAddress *bool    `xml:"associatePublicIpAddress,omitempty"`
	DeviceIndex              int      `xml:"deviceIndex"`
	NetworkCardIndex         int      `xml:"networkCardIndex"`
	InterfaceType            string   `xml:"interfaceType,omitempty"`
	Groups                   []string `xml:"groupSet>groupId,omitempty"`
}

type blockDeviceXML struct {
	DeviceName string `xml:"deviceName"`
	EBS        struct {
		VolumeSize int64  `xml:"volumeSize"`
		VolumeType string `xml:"volumeType,omitempty"`
		Encrypted  bool   `xml:"encrypted"`
	} `xml:"ebs"`
}

type describeLaunchTemplateVersionsOutput struct {
	ec2Output
	Versions []launchTemplateVersionXML `xml:"launchTemplateVersionSet>item"`
}

// describeLaunchTemplateVersions returns a template's data as it was created, so a test reads
// back through the SDK what the provider asked for.
func (e *Emulator) describeLaunchTemplateVersions(q query) (ec2Response, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var lt *LaunchTemplate
	for _, t := range e.world.launchTemplates {
		if (q.get("LaunchTemplateName") != "" && t.Name == q.get("LaunchTemplateName")) ||
			(q.get("LaunchTemplateId") != "" && t.ID == q.get("LaunchTemplateId")) {
			lt = t
		}
	}
	switch {
	case lt == nil && q.get("LaunchTemplateId") != "":
		return nil, &apiError{Code: "InvalidLaunchTemplateId.NotFound", Message: "The specified launch template, with template ID " + q.get("LaunchTemplateId") + ", does not exist."}
	case lt == nil && q.get("LaunchTemplateName") != "":
		return nil, &apiError{Code: "InvalidLaunchTemplateName.NotFoundException", Message: "The specified launch template, with template name " + q.get("LaunchTemplateName") + ", does not exist."}
	case lt == nil:
		return nil, &apiError{Code: "MissingParameter", Message: "The request must contain the parameter LaunchTemplateName or LaunchTemplateId"}
	}
	for _, v := range q.list("LaunchTemplateVersion") {
		if v != "$Latest" && v != "$Default" && v != "1" {
			if _, err := strconv.Atoi(v); err != nil {
				return nil, invalidParameter("launch template version %q is not a number, $Latest or $Default", v)
			}
			return nil, &apiError{Code: "InvalidLaunchTemplateId.VersionNotFound", Message: "Could not find launch template version " + v}
		}
	}
	data := launchTemplateDataXML{ImageID: lt.ImageID, UserData: base64.StdEncoding.EncodeToString([]byte(lt.UserData)),
		SecurityGroupIDs: lt.SecurityGroupIDs}
	if lt.InstanceProfile != "" {
		data.IamInstanceProfile = &instanceProfileXML{Name: lt.InstanceProfile}
	}
	if lt.CapacityReservationID != "" || lt.CapacityReservationPreference != "" {
		data.Reservation = &reservationSpecXML{Preference: lt.CapacityReservationPreference, ReservationID: lt.CapacityReservationID}
	}
	data.MarketType = lt.MarketType
	for _, n := range lt.NetworkInterfaces {
		data.NetworkInterfaces = append(data.NetworkInterfaces, networkInterfaceXML{AssociatePublicIPAddress: n.AssociatePublicIP,
			DeviceIndex: n.DeviceIndex, NetworkCardIndex: n.NetworkCardIndex, InterfaceType: n.InterfaceType, Groups: n.SecurityGroupIDs})
	}
	for _, v := range lt.Volumes {
		b := blockDeviceXML{DeviceName: v.Device}
		b.EBS.VolumeSize, b.EBS.VolumeType, b.EBS.Encrypted = v.SizeGiB, v.Type, v.Encrypted
		data.BlockDevices = append(data.BlockDevices, b)
	}
	return &describeLaunchTemplateVersionsOutput{Versions: []launchTemplateVersionXML{{LaunchTemplateID: lt.ID, LaunchTemplateName: lt.Name,
		VersionNumber: 1, DefaultVersion: true, CreateTime: ec2Time(lt.Created), Data: data, Tags: tagsXML(lt.Tags)}}}, nil
}
