package aws

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/aws/awserr"
	"github.com/tailor-sh/tailor/pkg/aws/resolve"
	"github.com/tailor-sh/tailor/pkg/aws/userdata"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

// Create implements cloud.CloudProvider. The CreateFleet client token is the claim's UID, so a
// retry after a crash gets the instance already launched instead of a second one.
func (p *Provider) Create(ctx context.Context, claim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	nc, res, err := p.readyNodeClass(ctx, claim.Spec.NodeClassRef)
	if err != nil {
		return nil, fmt.Errorf("nodeclaim %q: %w", claim.Name, err)
	}
	types, err := p.launchableTypes(ctx, nc, res)
	if err != nil {
		return nil, err
	}
	zoneIDs := zoneIDsOf(res)
	plan, err := planLaunch(claim, types, zoneIDs, p.region(), true)
	if err != nil {
		return nil, err
	}
	inst, err := p.launch(ctx, claim, nc, res, plan)
	if code := awserr.Code(err); code == "InvalidLaunchTemplateName.NotFoundException" {
		// A template was deleted behind our back (garbage collection, a person): make them again.
		p.templates.forgetAll()
		inst, err = p.launch(ctx, claim, nc, res, plan)
	}
	if plan.capacityType == karpv1.CapacityTypeReserved && (errors.Is(err, errReservationsFull) || cloud.IsInsufficientCapacity(err)) {
		// The reservations are full (other claims took the last slots, or EC2 said so, which
		// marked them): the claim falls back to the spot and on-demand offerings it allows, now.
		klog.FromContext(ctx).V(2).Info("capacity reservations full; falling back", "nodeclaim", claim.Name, "reason", err.Error())
		fallback, perr := planLaunch(claim, types, zoneIDs, p.region(), false)
		if perr != nil {
			return nil, fmt.Errorf("%w; and without them: %w", err, perr)
		}
		// A new client token only if EC2 saw the reserved attempt: otherwise the claim's own token
		// stays unused, and a retry after a crash that now tries a reservation gets back the
		// instance this launches rather than a second one.
		fallback.fallback = !errors.Is(err, errReservationsFull)
		inst, err = p.launch(ctx, claim, nc, res, fallback)
	}
	if err != nil {
		return nil, classifyLaunch(err)
	}
	for _, t := range types {
		if t.it.Name == inst.instanceType {
			for _, o := range t.it.Offerings {
				if o.Zone == inst.zone && o.CapacityType == inst.capacityType && o.Labels[awsv1.LabelCapacityReservationID] == inst.reservationID {
					klog.FromContext(ctx).V(2).Info("launched EC2 instance", "nodeclaim", claim.Name, "instance", inst.id,
						"instanceType", inst.instanceType, "zone", inst.zone, "capacityType", inst.capacityType, "price", o.PricePerHour)
					out := hydrate(claim, nc, t, o, inst, zoneIDs, p.region())
					out.Status.NodeName = p.nodeName(ctx, inst.id)
					return out, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("nodeclaim %q: EC2 launched %s (%s in %s), which the node class no longer offers", claim.Name, inst.id, inst.instanceType, inst.zone)
}

// nodeName is the name the instance's kubelet will register as: its private DNS name, which is
// what EKS nodes use. Knowing it at launch lets Tailor nominate the planned pods to the node
// before it exists. It is best effort: EC2 is eventually consistent and may not describe an
// instance it has just launched, and registration matches nodes by provider ID anyway.
// A throttled EC2 must not hold the launch up for long for it, hence the short deadline.
func (p *Provider) nodeName(ctx context.Context, id string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := p.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		klog.FromContext(ctx).V(2).Info("node name of a new instance not known yet", "instance", id, "error", err.Error())
		return ""
	}
	if len(out.Reservations) == 0 || len(out.Reservations[0].Instances) == 0 {
		return ""
	}
	return aws.ToString(out.Reservations[0].Instances[0].PrivateDnsName)
}

type launched struct {
	id, instanceType, zone, capacityType, imageID string
	// reservationID is the capacity reservation it was launched into, for capacity type reserved.
	reservationID string
}

// launch ensures the launch templates and sends one instant CreateFleet. Offerings the fleet
// reports short of capacity are avoided for the TTL, even when another one launched.
func (p *Provider) launch(ctx context.Context, claim *karpv1.NodeClaim, nc *awsv1.EC2NodeClass, res *resolve.Resolution, plan *launchPlan) (*launched, error) {
	options, taken, block := plan.options, []string(nil), false
	if plan.capacityType == karpv1.CapacityTypeReserved {
		if options, taken = p.takeReservations(plan.options); len(options) == 0 {
			return nil, errReservationsFull
		}
		block = options[0].offering.Labels[awsv1.LabelCapacityReservationType] == resolve.ReservationTypeCapacityBlock
	}
	launchedInto := ""
	defer func() { p.reservations.done(taken, launchedInto) }()
	fleet, err := p.fleetTemplates(ctx, claim, nc, res, options)
	if err != nil {
		return nil, err
	}
	out, err := p.ec2.CreateFleet(ctx, fleetRequest(p.opts.ClusterName, claim, nc, plan, block, fleet))
	if err != nil {
		return nil, fmt.Errorf("nodeclaim %q: CreateFleet: %w", claim.Name, err)
	}
	inst, err := p.fleetAnswer(claim, plan, fleet, out)
	if inst != nil {
		launchedInto = inst.reservationID
	}
	return inst, err
}

// fleetTemplates are a CreateFleet's launch template configs, with what the answer is read by.
type fleetTemplates struct {
	configs map[string]*ec2types.FleetLaunchTemplateConfigRequest
	// order is the templates' names in the order of the options that first used them.
	order []string
	// images is each instance type's image.
	images map[string]string
	// reservationOf names each template's reservation: one template per reservation, as its
	// target is in the template.
	reservationOf map[string]string
}

// fleetTemplates ensures a launch template for each option and groups the options' overrides
// by template. An option in a zone none of the class's subnets covers is left out.
func (p *Provider) fleetTemplates(ctx context.Context, claim *karpv1.NodeClaim, nc *awsv1.EC2NodeClass, res *resolve.Resolution, options []launchOption) (*fleetTemplates, error) {
	f := &fleetTemplates{configs: map[string]*ec2types.FleetLaunchTemplateConfigRequest{}, images: map[string]string{}, reservationOf: map[string]string{}}
	rendered := userDataCache{}
	for _, o := range options {
		spec, err := p.templateSpec(claim, nc, res, o.t, o.offering, rendered)
		if err != nil {
			// User data that cannot be rendered fails every launch from the class alike.
			return nil, &cloud.PermanentLaunchError{Code: "UserDataInvalid", Message: err.Error(), Err: err}
		}
		name, err := p.templates.ensure(ctx, spec)
		if err != nil {
			return nil, fmt.Errorf("nodeclaim %q: %w", claim.Name, err)
		}
		f.reservationOf[name] = spec.CapacityReservationID
		subnet := bestSubnet(res, o.offering.Zone)
		if subnet == "" {
			continue
		}
		cfg, ok := f.configs[name]
		if !ok {
			cfg = &ec2types.FleetLaunchTemplateConfigRequest{LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{
				LaunchTemplateName: aws.String(name), Version: aws.String("$Latest")}}
			f.configs[name] = cfg
			f.order = append(f.order, name)
		}
		cfg.Overrides = append(cfg.Overrides, ec2types.FleetLaunchTemplateOverridesRequest{
			InstanceType: ec2types.InstanceType(o.t.it.Name), SubnetId: aws.String(subnet), AvailabilityZone: aws.String(o.offering.Zone),
			ImageId: aws.String(o.t.imageID), Priority: aws.Float64(o.offering.PricePerHour)})
		f.images[o.t.it.Name] = o.t.imageID
	}
	return f, nil
}

// fleetRequest is the instant CreateFleet of one instance over the templates' overrides.
func fleetRequest(clusterName string, claim *karpv1.NodeClaim, nc *awsv1.EC2NodeClass, plan *launchPlan, block bool, f *fleetTemplates) *ec2.CreateFleetInput {
	tags := ec2Tags(instanceTags(clusterName, claim, nc))
	// A reserved launch is an on-demand launch aimed at a reservation (a Capacity Block's has a
	// capacity type of its own); the templates name the reservations.
	target := plan.capacityType
	switch {
	case block:
		target = resolve.ReservationTypeCapacityBlock
	case plan.capacityType == karpv1.CapacityTypeReserved:
		target = karpv1.CapacityTypeOnDemand
	}
	token := clientToken(claim)
	if plan.fallback {
		token += "-fallback"
	}
	in := &ec2.CreateFleetInput{
		Type:        ec2types.FleetTypeInstant,
		ClientToken: aws.String(token),
		Context:     nc.Spec.Context,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1),
			DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(target)},
		// The fleet is tagged too, so the IAM policy can require the ownership tags on every
		// resource CreateFleet makes.
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: tags},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: tags}, {ResourceType: ec2types.ResourceTypeFleet, Tags: tags}},
	}
	switch target {
	case karpv1.CapacityTypeSpot:
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
	case karpv1.CapacityTypeOnDemand:
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
	}
	for _, name := range f.order {
		in.LaunchTemplateConfigs = append(in.LaunchTemplateConfigs, *f.configs[name])
	}
	return in
}

// fleetAnswer reads CreateFleet's answer: the instance it launched, or why it launched none.
// Offerings short of capacity are marked unavailable (a reservation, full) either way.
func (p *Provider) fleetAnswer(claim *karpv1.NodeClaim, plan *launchPlan, f *fleetTemplates, out *ec2.CreateFleetOutput) (*launched, error) {
	var iced []cloud.OfferingKey
	var other []string
	for _, e := range out.Errors {
		code := aws.ToString(e.ErrorCode)
		ov := e.LaunchTemplateAndOverrides.Overrides
		if unfulfillableCapacityCodes.Has(code) && ov != nil {
			key := cloud.OfferingKey{InstanceType: string(ov.InstanceType), Zone: aws.ToString(ov.AvailabilityZone), CapacityType: plan.capacityType}
			if plan.capacityType == karpv1.CapacityTypeReserved {
				// A full reservation says nothing of the type's other reservations or pools.
				p.reservations.full(f.reservationOf[templateName(e.LaunchTemplateAndOverrides)])
			} else {
				p.unavailable.Mark(key)
			}
			iced = append(iced, key)
			continue
		}
		other = append(other, code+": "+aws.ToString(e.ErrorMessage))
	}
	for _, fi := range out.Instances {
		if len(fi.InstanceIds) == 0 {
			continue
		}
		zone := ""
		if ov := fi.LaunchTemplateAndOverrides.Overrides; ov != nil {
			zone = aws.ToString(ov.AvailabilityZone)
		}
		inst := &launched{id: fi.InstanceIds[0], instanceType: string(fi.InstanceType), zone: zone,
			capacityType: string(fi.Lifecycle), imageID: f.images[string(fi.InstanceType)]}
		// An instance from a reservation's template is in it. (A repeated client token can
		// answer with an earlier on-demand fallback's instance, whose template is not one.)
		name := templateName(fi.LaunchTemplateAndOverrides)
		if id := cmp.Or(f.reservationOf[name], p.templates.reservationOf(name)); id != "" {
			inst.capacityType, inst.reservationID = karpv1.CapacityTypeReserved, id
		}
		return inst, nil
	}
	return nil, fleetFailure(claim, iced, other)
}

// fleetFailure is the error of a fleet that launched nothing: short of capacity when every
// override was, permanent when every override failed permanently, else one to retry.
func fleetFailure(claim *karpv1.NodeClaim, iced []cloud.OfferingKey, other []string) error {
	if len(other) == 0 && len(iced) > 0 {
		return &cloud.InsufficientCapacityError{Offerings: iced,
			Message: fmt.Sprintf("nodeclaim %q: EC2 has no capacity for any of the %d offerings tried", claim.Name, len(iced))}
	}
	if len(other) > 0 && strings.HasPrefix(other[0], "InvalidLaunchTemplateName.NotFoundException") {
		return &fleetError{code: "InvalidLaunchTemplateName.NotFoundException", msg: other[0]}
	}
	msg := fmt.Sprintf("nodeclaim %q: CreateFleet launched nothing: %s", claim.Name, strings.Join(other, "; "))
	// The fleet's error is permanent only when every override failed permanently: one that
	// failed for capacity may launch later.
	code := ""
	if len(iced) == 0 {
		for _, o := range other {
			c, _, _ := strings.Cut(o, ":")
			if !permanentLaunchCodes.Has(c) {
				code = ""
				break
			}
			if code == "" {
				code = c
			}
		}
	}
	if code != "" {
		return &fleetError{code: code, msg: msg, detail: strings.Join(other, "; ")}
	}
	return errors.New(msg)
}

// clientToken is the idempotency token; EC2 allows 64 ASCII characters and a UID has 36.
func clientToken(claim *karpv1.NodeClaim) string {
	if claim.UID != "" {
		return string(claim.UID)
	}
	return "nodeclaim-" + claim.Name
}

// bestSubnet is the subnet of the zone with the most free addresses (status is sorted so).
func bestSubnet(res *resolve.Resolution, zone string) string {
	for _, s := range res.NodeClass.Status.Subnets {
		if s.Zone == zone {
			return s.ID
		}
	}
	return ""
}

func zoneIDsOf(res *resolve.Resolution) map[string]string {
	out := map[string]string{}
	for _, s := range res.NodeClass.Status.Subnets {
		out[s.Zone] = s.ZoneID
	}
	return out
}

// instanceTags mark ownership, so List, garbage collection and the IAM policy's conditions can
// tell Tailor's instances (and volumes) from everything else. Tailor's keys win over the class's.
func instanceTags(cluster string, claim *karpv1.NodeClaim, nc *awsv1.EC2NodeClass) map[string]string {
	tags := map[string]string{}
	for k, v := range nc.Spec.Tags {
		tags[k] = v
	}
	tags["kubernetes.io/cluster/"+cluster] = "owned"
	tags[awsv1.TagKeyEKSClusterName] = cluster
	tags[awsv1.TagKeyNodePool] = claim.Labels[karpv1.NodePoolLabelKey]
	tags[awsv1.TagKeyNodeClaim] = claim.Name
	tags[awsv1.TagKeyNodeClass] = nc.Name
	return tags
}

// userDataCache holds one launch's rendered user data by what differs between its instance
// types (max pods and reservations). A claim offers up to 60 types, most alike in those, and
// rendering (YAML, MIME) costs more CPU than the rest of a launch: a storm of replacements
// launched at once rendered the same document dozens of times each.
type userDataCache map[string]string

// templateSpec is the launch template for one launchable type of the claim.
func (p *Provider) templateSpec(claim *karpv1.NodeClaim, nc *awsv1.EC2NodeClass, res *resolve.Resolution, t *launchableType, o cloud.Offering, rendered userDataCache) (templateSpec, error) {
	key := fmt.Sprint(t.pods, t.kube, t.system, t.eviction) // fmt prints maps in key order
	ud, ok := rendered[key]
	if !ok {
		labels := kubeletLabels(claim.Labels)
		labels[awsv1.LabelNodeClass] = nc.Name
		node := userdata.Node{
			ClusterName: p.opts.ClusterName, APIServerEndpoint: p.opts.ClusterEndpoint, CABundle: p.opts.ClusterCABundle,
			ServiceCIDR: p.opts.ServiceCIDR, ClusterDNS: p.opts.ClusterDNS, Labels: labels,
			Taints:  append(append([]corev1.Taint(nil), claim.Spec.Taints...), claim.Spec.StartupTaints...),
			MaxPods: int32(t.pods), KubeReserved: t.kube, SystemReserved: t.system, EvictionHard: t.eviction,
			InstanceStoreRAID0: raid0(nc),
		}
		var err error
		if ud, err = userdata.Render(nc.AMIFamily(), node, deref(nc.Spec.UserData)); err != nil {
			return templateSpec{}, fmt.Errorf("EC2NodeClass %q: %w", nc.Name, err)
		}
		rendered[key] = ud
	}
	var groups []string
	for _, g := range res.NodeClass.Status.SecurityGroups {
		groups = append(groups, g.ID)
	}
	sort.Strings(groups)
	return templateSpec{ImageID: t.imageID, UserData: ud, SecurityGroups: groups, InstanceProfile: res.NodeClass.Status.InstanceProfile,
		NetworkInterfaces: networkInterfaces(efaInterfaces(claim, t.it), nc.Spec.AssociatePublicIPAddress),
		BlockDevices:      blockDeviceMappings(nc), Metadata: nc.Spec.MetadataOptions, Monitoring: deref(nc.Spec.DetailedMonitoring),
		CapacityReservationID: o.Labels[awsv1.LabelCapacityReservationID],
		CapacityBlock:         o.Labels[awsv1.LabelCapacityReservationType] == resolve.ReservationTypeCapacityBlock,
		Tags: map[string]string{"kubernetes.io/cluster/" + p.opts.ClusterName: "owned", awsv1.TagKeyEKSClusterName: p.opts.ClusterName,
			awsv1.TagKeyNodeClass: nc.Name}}, nil
}

// efaInterfaces is how many EFA interfaces to launch the type with: all it takes when the claim's
// pods ask for EFA devices (the devices exist only on attached interfaces), none otherwise.
func efaInterfaces(claim *karpv1.NodeClaim, it *cloud.InstanceType) int {
	if _, asked := claim.Spec.Resources.Requests[awsv1.ResourceEFA]; !asked {
		return 0
	}
	q := it.Capacity[awsv1.ResourceEFA]
	return int(q.Value())
}

// kubeletLabels drops labels the kubelet refuses to register with (kubernetes.io and k8s.io
// domains outside the few it may set), which Tailor's registration syncs onto the node instead.
func kubeletLabels(labels map[string]string) map[string]string {
	allowed := map[string]bool{corev1.LabelArchStable: true, corev1.LabelOSStable: true, corev1.LabelInstanceTypeStable: true,
		corev1.LabelTopologyZone: true, corev1.LabelTopologyRegion: true}
	out := map[string]string{}
	for k, v := range labels {
		domain, _, ok := strings.Cut(k, "/")
		restricted := ok && (strings.HasSuffix(domain, "kubernetes.io") || strings.HasSuffix(domain, "k8s.io"))
		selfSettable := strings.HasSuffix(domain, "kubelet.kubernetes.io") || (strings.HasSuffix(domain, "node.kubernetes.io") && !strings.HasSuffix(domain, "node-restriction.kubernetes.io"))
		if !restricted || allowed[k] || selfSettable {
			out[k] = v
		}
	}
	return out
}

// hydrate is the claim as launched: the offering's labels, the instance's IDs, and the type's
// capacity and allocatable.
func hydrate(claim *karpv1.NodeClaim, nc *awsv1.EC2NodeClass, t *launchableType, o cloud.Offering, inst *launched, zoneIDs map[string]string, region string) *karpv1.NodeClaim {
	out := claim.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for k, v := range offeringLabels(t.it, o, zoneIDs, region) {
		out.Labels[k] = v
	}
	out.Labels[awsv1.LabelNodeClass] = nc.Name
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[awsv1.AnnotationEC2NodeClassHash] = NodeClassHash(nc)
	out.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = NodeClassHashVersion
	out.Status.ProviderID = providerID(inst.zone, inst.id)
	out.Status.ImageID = inst.imageID
	out.Status.Capacity = t.it.Capacity.DeepCopy()
	out.Status.Allocatable = t.it.Allocatable()
	// A type launched without EFA interfaces has no EFA devices: the node will not register any,
	// so the claim neither promises them nor waits for them to initialize.
	if efaInterfaces(claim, t.it) == 0 {
		delete(out.Status.Capacity, awsv1.ResourceEFA)
		delete(out.Status.Allocatable, awsv1.ResourceEFA)
	}
	return out
}

// fleetError is an error CreateFleet reported in its response rather than as an API error.
type fleetError struct{ code, msg, detail string }

func (e *fleetError) Error() string     { return e.msg }
func (e *fleetError) ErrorCode() string { return e.code }

// ErrorMessage is EC2's own words, as an API error's is.
func (e *fleetError) ErrorMessage() string {
	if e.detail != "" {
		return e.detail
	}
	return e.msg
}
