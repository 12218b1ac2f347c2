package emulator

import (
	"fmt"
	"strconv"
)

// NetworkInterface is one interface a launch template starts its instances with.
type NetworkInterface struct {
	NetworkCardIndex, DeviceIndex int
	// InterfaceType is "efa" for an Elastic Fabric Adapter, "" for a plain ENA interface.
	InterfaceType string
	// AssociatePublicIP is nil when the template leaves it to the subnet.
	AssociatePublicIP *bool
	SecurityGroupIDs  []string
}

func (n NetworkInterface) copy() NetworkInterface {
	c := n
	c.SecurityGroupIDs = append([]string(nil), n.SecurityGroupIDs...)
	if n.AssociatePublicIP != nil {
		v := *n.AssociatePublicIP
		c.AssociatePublicIP = &v
	}
	return c
}

func copyInterfaces(in []NetworkInterface) []NetworkInterface {
	var out []NetworkInterface
	for _, n := range in {
		out = append(out, n.copy())
	}
	return out
}

// parseNetworkInterfaces reads LaunchTemplateData.NetworkInterface.N as the SDK sends it.
func parseNetworkInterfaces(data query) ([]NetworkInterface, error) {
	var out []NetworkInterface
	for i, item := range data.items("NetworkInterface") {
		card, err := item.int("NetworkCardIndex", 0)
		if err != nil {
			return nil, err
		}
		device, err := item.int("DeviceIndex", 0)
		if err != nil {
			return nil, err
		}
		nic := NetworkInterface{NetworkCardIndex: card, DeviceIndex: device, InterfaceType: item.get("InterfaceType"),
			SecurityGroupIDs: item.list("SecurityGroupId")}
		if v := item.get("AssociatePublicIpAddress"); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, invalidParameter("LaunchTemplateData.NetworkInterface.%d.AssociatePublicIpAddress must be true or false, got %q", i+1, v)
			}
			nic.AssociatePublicIP = &b
		}
		switch nic.InterfaceType {
		case "", "interface", "efa", "efa-only":
		default:
			return nil, invalidParameter("LaunchTemplateData.NetworkInterface.%d.InterfaceType %q is not interface, efa or efa-only", i+1, nic.InterfaceType)
		}
		out = append(out, nic)
	}
	return out, nil
}

// checkInterfaces is what EC2 refuses when it launches the type from the template: security
// groups both on the template and on its interfaces, EFA interfaces on a type without EFA or
// more of them than it takes, a network card it does not have, two interfaces in one slot.
func checkInterfaces(lt *LaunchTemplate, it *instanceTypeInfo) (code, msg string) {
	if len(lt.NetworkInterfaces) == 0 {
		return "", ""
	}
	if len(lt.SecurityGroupIDs) > 0 {
		return "InvalidParameterCombination", "Network interfaces and an instance-level security groups may not be specified on the same request"
	}
	efa, slots := int64(0), map[[2]int]bool{}
	for _, n := range lt.NetworkInterfaces {
		if int64(n.NetworkCardIndex) >= it.NetworkInfo.MaximumNetworkCards {
			return "InvalidParameterValue", fmt.Sprintf("Network card index %d is not valid for instance type %s, which has %d network cards",
				n.NetworkCardIndex, it.InstanceType, it.NetworkInfo.MaximumNetworkCards)
		}
		slot := [2]int{n.NetworkCardIndex, n.DeviceIndex}
		if slots[slot] {
			return "InvalidParameterValue", fmt.Sprintf("Two network interfaces have network card index %d and device index %d", slot[0], slot[1])
		}
		slots[slot] = true
		if n.InterfaceType == "efa" || n.InterfaceType == "efa-only" {
			efa++
		}
	}
	switch most := maxEFA(it); {
	case efa > 0 && most == 0:
		return "InvalidParameterCombination", fmt.Sprintf("The instance type %s does not support Elastic Fabric Adapter (EFA) interfaces", it.InstanceType)
	case efa > most:
		return "InvalidParameterValue", fmt.Sprintf("The instance type %s supports at most %d EFA interfaces; %d were requested", it.InstanceType, most, efa)
	}
	return "", ""
}

// maxEFA is how many EFA interfaces the type takes.
func maxEFA(it *instanceTypeInfo) int64 {
	if it.NetworkInfo.EfaInfo == nil {
		return 0
	}
	return it.NetworkInfo.EfaInfo.MaximumEfaInterfaces
}

// efaInterfaces counts the template's EFA interfaces: the EFA devices its instances have.
func efaInterfaces(lt *LaunchTemplate) int64 {
	n := int64(0)
	for _, nic := range lt.NetworkInterfaces {
		if nic.InterfaceType == "efa" || nic.InterfaceType == "efa-only" {
			n++
		}
	}
	return n
}

// instanceSecurityGroups are the template's groups, or its interfaces' when it sets them there.
func instanceSecurityGroups(lt *LaunchTemplate) []string {
	out := append([]string(nil), lt.SecurityGroupIDs...)
	seen := map[string]bool{}
	for _, g := range out {
		seen[g] = true
	}
	for _, n := range lt.NetworkInterfaces {
		for _, g := range n.SecurityGroupIDs {
			if !seen[g] {
				seen[g] = true
				out = append(out, g)
			}
		}
	}
	return out
}
