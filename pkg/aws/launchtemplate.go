package aws

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"golang.org/x/sync/singleflight"
	"k8s.io/utils/clock"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	"github.com/tailor-sh/tailor/pkg/aws/awserr"
)

// templateSpec is everything a launch template holds. Its hash names the template, so equal
// specs share one template and any difference (another AMI, max pods, labels) makes a new one.
type templateSpec struct {
	ImageID         string                     `json:"imageID"`
	UserData        string                     `json:"userData"`
	SecurityGroups  []string                   `json:"securityGroups"`
	InstanceProfile string                     `json:"instanceProfile"`
	BlockDevices    []awsv1.BlockDeviceMapping `json:"blockDevices"`
	Metadata        *awsv1.MetadataOptions     `json:"metadata,omitempty"`
	Monitoring      bool                       `json:"monitoring"`
	Tags            map[string]string          `json:"tags"`
	// NetworkInterfaces are set only when the instance needs more than EC2's default interface:
	// EFA interfaces, or a say on the public IPv4 address.
	NetworkInterfaces []networkInterface `json:"networkInterfaces,omitempty"`
	// CapacityReservationID is the reservation a reserved launch targets (one template per
	// reservation); empty opts out of open reservations, as Karpenter's templates do, so spot and
	// on-demand launches never use up a reservation the planner counts on.
	CapacityReservationID string `json:"capacityReservationID,omitempty"`
	// CapacityBlock launches into a Capacity Block, which needs its own market type.
	CapacityBlock bool `json:"capacityBlock,omitempty"`
}

// networkInterface is one interface the instance starts with.
type networkInterface struct {
	NetworkCardIndex  int32  `json:"networkCardIndex"`
	DeviceIndex       int32  `json:"deviceIndex"`
	InterfaceType     string `json:"interfaceType,omitempty"`
	AssociatePublicIP *bool  `json:"associatePublicIP,omitempty"`
}

// interfaceTypeEFA is EC2's name for an Elastic Fabric Adapter interface.
const interfaceTypeEFA = "efa"

// networkInterfaces are the interfaces to launch with: efa EFA interfaces, one per network card
// as Karpenter attaches them (the first is the primary interface, the others take device index
// 1 on their cards so the primary keeps the public address), each with the node class's
// public-IP choice; or, without EFA, one primary interface when the node class sets that choice;
// or none, to keep EC2's default interface and the subnet's public-IP setting.
func networkInterfaces(efa int, associatePublicIP *bool) []networkInterface {
	if efa > 0 {
		out := make([]networkInterface, 0, efa)
		for card := range efa {
			device := int32(1)
			if card == 0 {
				device = 0
			}
			out = append(out, networkInterface{NetworkCardIndex: int32(card), DeviceIndex: device, InterfaceType: interfaceTypeEFA,
				AssociatePublicIP: associatePublicIP})
		}
		return out
	}
	if associatePublicIP != nil {
		return []networkInterface{{DeviceIndex: 0, AssociatePublicIP: associatePublicIP}}
	}
	return nil
}

func (s templateSpec) name(cluster string) string {
	doc, _ := json.Marshal(s)
	h := fnv.New64a()
	_, _ = h.Write(doc)
	return "tailor/" + cluster + "/" + strconv.FormatUint(h.Sum64(), 36)
}

// launchTemplates creates templates on first use and remembers which exist and when they were
// last used, so idle ones can be deleted.
type launchTemplates struct {
	ec2     *ec2.Client
	cluster string
	clock   clock.Clock
	// creating lets one launch create a template while the others that need it wait for it:
	// a template is known only once EC2 has it, or a launch beside the first would name a
	// template that does not exist yet.
	creating singleflight.Group

	mu       sync.Mutex
	lastUsed map[string]time.Time
	// reservations maps the names of templates that target a capacity reservation to it. Names
	// are hashes of the whole spec, so an entry stays true, and an instance EC2 hands back for a
	// repeated client token is known to be in its reservation even when this launch's own plan
	// no longer names it (the reservation is full: with that very instance).
	reservations map[string]string
}

func newLaunchTemplates(c *ec2.Client, cluster string, clk clock.Clock) *launchTemplates {
	return &launchTemplates{ec2: c, cluster: cluster, clock: clk, lastUsed: map[string]time.Time{}, reservations: map[string]string{}}
}

// reservationOf returns the capacity reservation the named template targets, or "".
func (l *launchTemplates) reservationOf(name string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reservations[name]
}

// forget drops a template from memory, e.g. when EC2 says it no longer exists.
func (l *launchTemplates) forget(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.lastUsed, name)
}

func (l *launchTemplates) forgetAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastUsed = map[string]time.Time{}
}

// ensure returns the name of a template with the spec, creating it if EC2 has none.
func (l *launchTemplates) ensure(ctx context.Context, spec templateSpec) (string, error) {
	name := spec.name(l.cluster)
	l.mu.Lock()
	if spec.CapacityReservationID != "" {
		l.reservations[name] = spec.CapacityReservationID
	}
	_, known := l.lastUsed[name]
	if known {
		l.lastUsed[name] = l.clock.Now()
	}
	l.mu.Unlock()
	if known {
		return name, nil
	}
	if _, err, _ := l.creating.Do(name, func() (any, error) { return nil, l.create(ctx, name, spec) }); err != nil {
		return "", err
	}
	l.mu.Lock()
	l.lastUsed[name] = l.clock.Now()
	l.mu.Unlock()
	return name, nil
}

// create makes the template in EC2 unless it is there already.
func (l *launchTemplates) create(ctx context.Context, name string, spec templateSpec) error {
	_, err := l.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
	switch code := awserr.Code(err); {
	case err == nil:
		return nil
	case code != "InvalidLaunchTemplateName.NotFoundException":
		return fmt.Errorf("describing launch template %s: %w", name, err)
	}
	_, err = l.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: templateData(spec),
		TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: ec2Tags(spec.Tags)}},
	})
	if err != nil && awserr.Code(err) != "InvalidLaunchTemplateName.AlreadyExistsException" {
		return fmt.Errorf("creating launch template %s: %w", name, err)
	}
	return nil
}

func templateData(spec templateSpec) *ec2types.RequestLaunchTemplateData {
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:            aws.String(spec.ImageID),
		UserData:           aws.String(base64.StdEncoding.EncodeToString([]byte(spec.UserData))),
		SecurityGroupIds:   spec.SecurityGroups,
		IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(spec.InstanceProfile)},
		Monitoring:         &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(spec.Monitoring)},
		TagSpecifications:  []ec2types.LaunchTemplateTagSpecificationRequest{{ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: ec2Tags(spec.Tags)}},
	}
	data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
		CapacityReservationPreference: ec2types.CapacityReservationPreferenceNone}
	if spec.CapacityReservationID != "" {
		data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(spec.CapacityReservationID)}}
	}
	if spec.CapacityBlock {
		data.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeCapacityBlock}
	}
	// EC2 takes security groups on the template or on its interfaces, never both.
	for _, nic := range spec.NetworkInterfaces {
		req := ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
			NetworkCardIndex: aws.Int32(nic.NetworkCardIndex), DeviceIndex: aws.Int32(nic.DeviceIndex),
			AssociatePublicIpAddress: nic.AssociatePublicIP, Groups: spec.SecurityGroups}
		if nic.InterfaceType != "" {
			req.InterfaceType = aws.String(nic.InterfaceType)
		}
		data.NetworkInterfaces = append(data.NetworkInterfaces, req)
		data.SecurityGroupIds = nil
	}
	for _, b := range spec.BlockDevices {
		m := ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: b.DeviceName}
		if e := b.EBS; e != nil {
			m.Ebs = &ec2types.LaunchTemplateEbsBlockDeviceRequest{DeleteOnTermination: e.DeleteOnTermination, Encrypted: e.Encrypted,
				KmsKeyId: e.KMSKeyID, SnapshotId: e.SnapshotID, VolumeType: ec2types.VolumeType(deref(e.VolumeType))}
			if e.VolumeSize != nil {
				m.Ebs.VolumeSize = aws.Int32(int32(e.VolumeSize.Value() >> 30))
			}
			if e.IOPS != nil {
				m.Ebs.Iops = aws.Int32(int32(*e.IOPS))
			}
			if e.Throughput != nil {
				m.Ebs.Throughput = aws.Int32(int32(*e.Throughput))
			}
		}
		data.BlockDeviceMappings = append(data.BlockDeviceMappings, m)
	}
	if md := spec.Metadata; md != nil {
		data.MetadataOptions = &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
			HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointState(deref(md.HTTPEndpoint)),
			HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(deref(md.HTTPProtocolIPv6)),
			HttpTokens:              ec2types.LaunchTemplateHttpTokensState(deref(md.HTTPTokens)),
			InstanceMetadataTags:    ec2types.LaunchTemplateInstanceMetadataTagsStateDisabled,
			HttpPutResponseHopLimit: aws.Int32(int32(deref(md.HTTPPutResponseHopLimit))),
		}
	}
	return data
}

// CollectLaunchTemplates deletes this cluster's launch templates that no launch used within
// idle. Templates found in EC2 but not in memory (made before a restart) count as used now, so
// a restart never deletes a template a launch is about to use.
func (p *Provider) CollectLaunchTemplates(ctx context.Context, idle time.Duration) (deleted []string, err error) {
	l := p.templates
	pg := ec2.NewDescribeLaunchTemplatesPaginator(l.ec2, &ec2.DescribeLaunchTemplatesInput{MaxResults: aws.Int32(200),
		Filters: []ec2types.Filter{{Name: aws.String("tag:" + awsv1.TagKeyEKSClusterName), Values: []string{l.cluster}}}})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return deleted, fmt.Errorf("listing launch templates: %w", err)
		}
		for _, lt := range page.LaunchTemplates {
			name := aws.ToString(lt.LaunchTemplateName)
			l.mu.Lock()
			used, ok := l.lastUsed[name]
			if !ok {
				used = l.clock.Now()
				l.lastUsed[name] = used
			}
			l.mu.Unlock()
			if l.clock.Since(used) < idle {
				continue
			}
			_, err := l.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String(name)})
			if err != nil && awserr.Code(err) != "InvalidLaunchTemplateName.NotFoundException" {
				return deleted, fmt.Errorf("deleting launch template %s: %w", name, err)
			}
			l.forget(name)
			deleted = append(deleted, name)
		}
	}
	return deleted, nil
}

func ec2Tags(tags map[string]string) []ec2types.Tag {
	out := make([]ec2types.Tag, 0, len(tags))
	for _, k := range sortedKeys(tags) {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return out
}
