package emulator

import (
	"time"
)

// terminatedRetention is how long EC2 keeps describing a terminated instance.
const terminatedRetention = time.Hour

// Instance is an emulated EC2 instance.
type Instance struct {
	ID, InstanceType, Zone, SubnetID, ImageID string
	// CapacityType is "spot" or "on-demand".
	CapacityType              string
	PrivateIP, PrivateDNSName string
	// State is "running" or "terminated".
	State            string
	LaunchTemplate   string
	InstanceProfile  string
	LaunchTime       time.Time
	TerminatedAt     time.Time
	ClientToken      string
	Tags, VolumeTags map[string]string
	SecurityGroupIDs []string
	// NetworkInterfaces are the interfaces it was launched with from its template (EFA ones
	// included); none means EC2's default interface.
	NetworkInterfaces []NetworkInterface
	// CapacityReservationID is the reservation it was launched into, if any.
	CapacityReservationID string
}

// ProviderID is the Node's spec.providerID for the instance, as the AWS cloud provider sets it.
func (i *Instance) ProviderID() string { return "aws:///" + i.Zone + "/" + i.ID }

func (i *Instance) copy() Instance {
	c := *i
	c.Tags, c.VolumeTags = copyTags(i.Tags), copyTags(i.VolumeTags)
	c.SecurityGroupIDs = append([]string(nil), i.SecurityGroupIDs...)
	c.NetworkInterfaces = copyInterfaces(i.NetworkInterfaces)
	return c
}

// Instances returns copies of every instance still described, terminated ones included.
func (e *Emulator) Instances() []Instance {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.forgetTerminatedLocked()
	out := make([]Instance, 0, len(e.world.instances))
	for _, i := range e.world.instances {
		out = append(out, i.copy())
	}
	return out
}

// forgetTerminatedLocked drops instances terminated longer ago than EC2 keeps them.
func (e *Emulator) forgetTerminatedLocked() {
	now := e.clock.Now()
	kept := e.world.instances[:0]
	for _, i := range e.world.instances {
		if i.State != "terminated" || now.Sub(i.TerminatedAt) < terminatedRetention {
			kept = append(kept, i)
		}
	}
	e.world.instances = kept
}

type instanceStateXML struct {
	Code int    `xml:"code"`
	Name string `xml:"name"`
}

func stateXML(name string) instanceStateXML {
	if name == "terminated" {
		return instanceStateXML{Code: 48, Name: name}
	}
	return instanceStateXML{Code: 16, Name: name}
}

type groupXML struct {
	GroupID string `xml:"groupId"`
}

type instanceXML struct {
	InstanceID            string           `xml:"instanceId"`
	ImageID               string           `xml:"imageId"`
	State                 instanceStateXML `xml:"instanceState"`
	PrivateDNSName        string           `xml:"privateDnsName"`
	InstanceType          string           `xml:"instanceType"`
	LaunchTime            string           `xml:"launchTime"`
	AvailabilityZone      string           `xml:"placement>availabilityZone"`
	Tenancy               string           `xml:"placement>tenancy"`
	SubnetID              string           `xml:"subnetId"`
	VpcID                 string           `xml:"vpcId"`
	PrivateIPAddress      string           `xml:"privateIpAddress"`
	Groups                []groupXML       `xml:"groupSet>item"`
	Architecture          string           `xml:"architecture"`
	InstanceLifecycle     string           `xml:"instanceLifecycle,omitempty"`
	ClientToken           string           `xml:"clientToken,omitempty"`
	IAMInstanceProfile    string           `xml:"iamInstanceProfile>arn,omitempty"`
	CapacityReservationID string           `xml:"capacityReservationId,omitempty"`
	Tags                  []tagXML         `xml:"tagSet>item"`
}

type reservationXML struct {
	ReservationID string        `xml:"reservationId"`
	OwnerID       string        `xml:"ownerId"`
	Instances     []instanceXML `xml:"instancesSet>item"`
}

type describeInstancesOutput struct {
	ec2Output
	Reservations []reservationXML `xml:"reservationSet>item"`
	NextToken    string           `xml:"nextToken,omitempty"`
}

func (e *Emulator) describeInstances(q query) (ec2Response, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.forgetTerminatedLocked()
	items, err := byIDs(q, "InstanceId", e.world.instances, func(i *Instance) string { return i.ID }, "InvalidInstanceID.NotFound")
	if err != nil {
		return nil, err
	}
	items, err = filterSlice(items, parseFilters(q), func(i *Instance) attributes {
		return func(name string) ([]string, bool) {
			switch name {
			case "instance-id":
				return []string{i.ID}, true
			case "instance-state-name":
				return []string{i.State}, true
			case "instance-type":
				return []string{i.InstanceType}, true
			case "availability-zone":
				return []string{i.Zone}, true
			case "subnet-id":
				return []string{i.SubnetID}, true
			case "client-token":
				return []string{i.ClientToken}, true
			case "capacity-reservation-id":
				if i.CapacityReservationID == "" {
					return nil, true
				}
				return []string{i.CapacityReservationID}, true
			case "instance-lifecycle":
				if i.CapacityType == "spot" {
					return []string{"spot"}, true
				}
				return nil, true
			}
			return tagAttributes(i.Tags, name)
		}
	})
	if err != nil {
		return nil, err
	}
	items, next, err := pageOf(e, q, items, 0)
	if err != nil {
		return nil, err
	}
	out := &describeInstancesOutput{NextToken: next}
	for _, i := range items {
		x := instanceXML{InstanceID: i.ID, ImageID: i.ImageID, State: stateXML(i.State), PrivateDNSName: i.PrivateDNSName,
			InstanceType: i.InstanceType, LaunchTime: ec2Time(i.LaunchTime), AvailabilityZone: i.Zone, Tenancy: "default",
			SubnetID: i.SubnetID, VpcID: VPCID, PrivateIPAddress: i.PrivateIP, Architecture: e.architecture(i.InstanceType),
			ClientToken: i.ClientToken, Tags: tagsXML(i.Tags), CapacityReservationID: i.CapacityReservationID}
		if i.InstanceProfile != "" {
			x.IAMInstanceProfile = "arn:aws:iam::" + AccountID + ":instance-profile/" + i.InstanceProfile
		}
		if i.CapacityType == "spot" {
			x.InstanceLifecycle = "spot"
		}
		for _, g := range i.SecurityGroupIDs {
			x.Groups = append(x.Groups, groupXML{GroupID: g})
		}
		out.Reservations = append(out.Reservations, reservationXML{ReservationID: "r-" + i.ID[2:], OwnerID: AccountID, Instances: []instanceXML{x}})
	}
	return out, nil
}

func (e *Emulator) architecture(instanceType string) string {
	if it := e.instanceType(instanceType); it != nil {
		return it.ProcessorInfo.SupportedArchitectures[0]
	}
	return ""
}

type stateChangeXML struct {
	InstanceID    string           `xml:"instanceId"`
	CurrentState  instanceStateXML `xml:"currentState"`
	PreviousState instanceStateXML `xml:"previousState"`
}

type terminateInstancesOutput struct {
	ec2Output
	Instances []stateChangeXML `xml:"instancesSet>item"`
}

// terminateInstances is idempotent for instances already terminated, and fails the whole call
// for an ID it never knew (or has forgotten), as EC2 does.
func (e *Emulator) terminateInstances(q query) (ec2Response, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.forgetTerminatedLocked()
	items, err := byIDs(q, "InstanceId", e.world.instances, func(i *Instance) string { return i.ID }, "InvalidInstanceID.NotFound")
	if err != nil {
		return nil, err
	}
	if len(q.list("InstanceId")) == 0 {
		return nil, &apiError{Code: "MissingParameter", Message: "The request must contain the parameter InstanceId"}
	}
	out := &terminateInstancesOutput{}
	for _, i := range items {
		prev := i.State
		if i.State != "terminated" {
			i.State, i.TerminatedAt = "terminated", e.clock.Now()
			e.releaseIPLocked(i.SubnetID)
		}
		out.Instances = append(out.Instances, stateChangeXML{InstanceID: i.ID, CurrentState: stateXML(i.State), PreviousState: stateXML(prev)})
	}
	return out, nil
}

func (e *Emulator) releaseIPLocked(subnetID string) {
	for _, s := range e.world.subnets {
		if s.ID == subnetID {
			s.AvailableIPs++
		}
	}
}
