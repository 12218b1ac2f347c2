// Package aws is Tailor's CloudProvider for EC2, on aws-sdk-go-v2. It reads the catalog from
// DescribeInstanceTypes and DescribeInstanceTypeOfferings, prices it from the Pricing API and
// spot price history, resolves EC2NodeClasses (subnets, security groups, AMIs), and launches one
// instance per NodeClaim with an instant CreateFleet whose client token is the claim's UID.
//
// The same code runs against AWS and against pkg/aws/emulator: Options.Endpoint is the only
// difference.
package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	pricingapi "github.com/aws/aws-sdk-go-v2/service/pricing"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/aws/resolve"
	"github.com/tailor-sh/tailor/pkg/cloud"
	awslisters "github.com/tailor-sh/tailor/pkg/generated/listers/aws/v1"
)

// ProviderName is what Name returns; provider IDs are aws:///<zone>/<instance-id>.
const ProviderName = "aws"

// resolutionTTL is how long a node class's resolved subnets, groups and AMIs are reused.
const resolutionTTL = time.Minute

// Provider implements cloud.CloudProvider on EC2. It is safe for concurrent use.
type Provider struct {
	opts       Options
	cfg        aws.Config
	regionName string
	ec2        *ec2.Client
	resolver   *resolve.Resolver
	// reservations counts what is left of each capacity reservation; the resolver feeds it
	// every count EC2 describes.
	reservations *reservationTracker
	catalog      *catalog
	prices       *prices
	unavailable  *cloud.UnavailableOfferings
	templates    *launchTemplates
	// devices applies the device templates of EC2NodeClasses and NodePools (devicetemplates.go).
	devices declaredDevices

	mu          sync.Mutex
	resolutions map[string]cachedResolution
	// launchable keeps each node class's launchable types while nothing they depend on changes.
	launchable map[string]launchableEntry
	// warned holds the NodePools (name/generation) already warned of a deprecated key.
	warned sync.Map

	// classLister, once set, is where EC2NodeClasses are read (nodeclasscache.go).
	classLister atomic.Pointer[awslisters.EC2NodeClassLister]

	controllersOnce sync.Once
	controllers     []cloud.Runnable
	// classCache is the EC2NodeClass cache's controller for the informers of classCacheFor.
	classCacheFor any
	classCache    cloud.Runnable
	// consuming is set while HandleInterruptions consumes the queue.
	consuming atomic.Bool
}

type cachedResolution struct {
	res *resolve.Resolution
	at  time.Time
}

var _ cloud.CloudProvider = (*Provider)(nil)

// New builds the provider. It does no I/O: the catalog and prices are read on first use.
func New(ctx context.Context, opts Options) (*Provider, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	cfg, err := SDKConfig(ctx, opts)
	if err != nil {
		return nil, err
	}
	ec2c := ec2.NewFromConfig(cfg)
	pc := pricingapi.NewFromConfig(cfg, func(o *pricingapi.Options) { o.Region = pricingRegion(cfg.Region) })
	p := &Provider{
		opts:         opts,
		cfg:          cfg,
		regionName:   cfg.Region,
		ec2:          ec2c,
		reservations: newReservationTracker(opts.Clock, opts.UnavailableOfferingsTTL),
		catalog:      &catalog{ec2: ec2c, clock: opts.Clock},
		prices:       newPrices(ec2c, pc, cfg.Region, opts.Clock),
		unavailable:  cloud.NewUnavailableOfferingsFor(opts.Clock, opts.UnavailableOfferingsTTL),
		templates:    newLaunchTemplates(ec2c, opts.ClusterName, opts.Clock),
		resolutions:  map[string]cachedResolution{},
		launchable:   map[string]launchableEntry{},
	}
	p.resolver = resolve.New(cfg, opts.ClusterName, opts.KubernetesVersion, opts.Clock, p.reservations.describing)
	logBuiltInPrices(ctx, cfg.Region)
	return p, nil
}

func (p *Provider) region() string { return p.regionName }

// Name implements cloud.CloudProvider.
func (p *Provider) Name() string { return ProviderName }

// InstanceTypes implements cloud.CloudProvider: every type some AMI of the pool's node class can
// boot, with offerings in the zones of its subnets.
func (p *Provider) InstanceTypes(ctx context.Context, pool *karpv1.NodePool) ([]*cloud.InstanceType, error) {
	nc, res, err := p.readyNodeClass(ctx, pool.Spec.Template.Spec.NodeClassRef)
	if err != nil {
		return nil, fmt.Errorf("nodepool %q: %w", pool.Name, err)
	}
	types, err := p.launchableTypes(ctx, nc, res)
	if err != nil {
		return nil, fmt.Errorf("nodepool %q: %w", pool.Name, err)
	}
	p.warnDeprecatedKeys(ctx, pool)
	out := make([]*cloud.InstanceType, 0, len(types))
	for _, t := range types {
		out = append(out, t.it)
	}
	return p.devices.apply(ctx, nc, pool, out)
}

// warnDeprecatedKeys logs, once per NodePool and generation, that it selects on the flex key
// Tailor used before Karpenter v1.7 renamed it: it still matches, but manifests written for
// Karpenter use the new key, which every type carries ("true" or "false").
func (p *Provider) warnDeprecatedKeys(ctx context.Context, pool *karpv1.NodePool) {
	for _, r := range pool.Spec.Template.Spec.Requirements {
		if r.Key != awsv1.LabelInstanceCapacityFlex {
			continue
		}
		key := fmt.Sprintf("%s/%d", pool.Name, pool.Generation)
		if _, seen := p.warned.LoadOrStore(key, true); !seen {
			klog.FromContext(ctx).Info("Warning: NodePool selects on a deprecated label key; use the new one",
				"nodePool", pool.Name, "key", awsv1.LabelInstanceCapacityFlex, "use", awsv1.LabelInstanceCapabilityFlex)
		}
		return
	}
}

// MarkOfferingUnavailable makes the planner avoid the offering for UnavailableOfferingsTTL, e.g.
// after a spot interruption warning for that type and zone.
func (p *Provider) MarkOfferingUnavailable(key cloud.OfferingKey) { p.unavailable.Mark(key) }

// Resolver exposes the node class resolver, for a controller that writes EC2NodeClass status.
func (p *Provider) Resolver() *resolve.Resolver { return p.resolver }

// readyNodeClass reads the referenced EC2NodeClass and resolves it, failing with the reason when
// instances cannot be launched from it.
func (p *Provider) readyNodeClass(ctx context.Context, ref *karpv1.NodeClassReference) (*awsv1.EC2NodeClass, *resolve.Resolution, error) {
	// A pool that names no EC2NodeClass cannot launch here; it is not ready, and says which field
	// is wrong, while every other pool plans on. A plain error would stop every plan.
	if ref == nil || ref.Name == "" {
		return nil, nil, &cloud.NodeClassNotReadyError{Kind: "EC2NodeClass", Reason: "NodeClassInvalid",
			Message: "spec.template.spec.nodeClassRef is empty: the AWS provider launches from an EC2NodeClass"}
	}
	if (ref.Kind != "" && ref.Kind != "EC2NodeClass") || (ref.Group != "" && ref.Group != awsv1.Group) {
		return nil, nil, &cloud.NodeClassNotReadyError{Kind: ref.Kind, Name: ref.Name, Reason: "NodeClassInvalid",
			Message: fmt.Sprintf("spec.template.spec.nodeClassRef is group %q kind %q: the AWS provider launches only from kind EC2NodeClass of group %s",
				ref.Group, ref.Kind, awsv1.Group)}
	}
	nc, err := p.nodeClass(ctx, ref.Name)
	if apierrors.IsNotFound(err) {
		return nil, nil, &cloud.NodeClassNotReadyError{Kind: "EC2NodeClass", Name: ref.Name, Reason: "NodeClassNotFound",
			Message: "spec.template.spec.nodeClassRef names an EC2NodeClass that does not exist"}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading EC2NodeClass %q: %w", ref.Name, err)
	}
	res, err := p.resolve(ctx, nc)
	if err != nil {
		return nil, nil, err
	}
	if ok, _ := res.Ready(); !ok {
		return nil, nil, notReady(res.NodeClass)
	}
	return nc, res, nil
}

// notReady is the class's Ready condition as the error that keeps its NodePools out of plans.
func notReady(nc *awsv1.EC2NodeClass) *cloud.NodeClassNotReadyError {
	err := &cloud.NodeClassNotReadyError{Kind: "EC2NodeClass", Name: nc.Name, Reason: "NotResolved", Message: "its status is not known yet"}
	if c := nc.GetCondition(awsv1.ConditionTypeReady); c != nil {
		err.Reason, err.Message = c.Reason, c.Message
	}
	return err
}

var _ cloud.NodeClassReadiness = (*Provider)(nil)

// NodeClassReady implements cloud.NodeClassReadiness from the EC2NodeClass's own status, which
// its status controller keeps current: NodePools say what kubectl shows on their class.
func (p *Provider) NodeClassReady(ctx context.Context, ref *karpv1.NodeClassReference) (metav1.ConditionStatus, string, string, error) {
	if ref == nil || ref.Name == "" || (ref.Kind != "" && ref.Kind != "EC2NodeClass") {
		return metav1.ConditionFalse, "NodeClassInvalid", "spec.template.spec.nodeClassRef must name an EC2NodeClass", nil
	}
	nc, err := p.nodeClass(ctx, ref.Name)
	if apierrors.IsNotFound(err) {
		return metav1.ConditionFalse, "NodeClassNotFound", fmt.Sprintf("EC2NodeClass %q not found", ref.Name), nil
	}
	if err != nil {
		return metav1.ConditionUnknown, "", "", fmt.Errorf("reading EC2NodeClass %q: %w", ref.Name, err)
	}
	c := nc.GetCondition(awsv1.ConditionTypeReady)
	if c == nil {
		return metav1.ConditionUnknown, "AwaitingReconciliation", fmt.Sprintf("EC2NodeClass %q has not been resolved yet", ref.Name), nil
	}
	if c.Status == metav1.ConditionTrue {
		return metav1.ConditionTrue, "", "", nil
	}
	return c.Status, c.Reason, fmt.Sprintf("EC2NodeClass %q: %s", ref.Name, c.Message), nil
}

// resolve caches resolutions for a minute per node class spec, so a burst of launches does not
// re-describe the VPC for each claim, while a spec change is seen at once.
func (p *Provider) resolve(ctx context.Context, nc *awsv1.EC2NodeClass) (*resolve.Resolution, error) {
	key := nc.Name + "/" + specKey(nc)
	p.mu.Lock()
	cached, ok := p.resolutions[key]
	p.mu.Unlock()
	if ok && p.opts.Clock.Since(cached.at) < resolutionTTL {
		return cached.res, nil
	}
	res, err := p.resolver.Resolve(ctx, nc)
	if err != nil {
		return nil, fmt.Errorf("resolving EC2NodeClass %q: %w", nc.Name, err)
	}
	p.mu.Lock()
	p.resolutions[key] = cachedResolution{res: res, at: p.opts.Clock.Now()}
	p.mu.Unlock()
	return res, nil
}

func specKey(nc *awsv1.EC2NodeClass) string {
	doc, _ := json.Marshal(nc.Spec)
	h := fnv.New64a()
	_, _ = h.Write(doc)
	return strconv.FormatUint(h.Sum64(), 36)
}
