package fake

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

// ProviderName is what Name returns and the scheme of the provider IDs the fake hands out.
const ProviderName = "fake"

// ImageID is the one image every fake instance boots.
const ImageID = "ami-fake0000000000001"

// Options configures a Provider. Every field is optional.
type Options struct {
	Clock clock.Clock
	// Catalog replaces the SIMULATED Catalog(); the provider keeps its own copy.
	Catalog     []*cloud.InstanceType
	ClusterName string
	// Region labels the nodes and, without a Catalog, places the catalog in its zones
	// (CatalogIn); it must be a name RegionZones accepts. Default: Region.
	Region string
	// Joiner, when set, is called RegistrationDelay after a launch to play the booting kubelet.
	Joiner            Joiner
	RegistrationDelay time.Duration
}

// Instance is one running fake machine.
type Instance struct {
	ID           string
	ProviderID   string
	InstanceType string
	Zone         string
	CapacityType string
	PricePerHour float64
	ClaimName    string
	ClaimUID     types.UID
	NodePool     string
	LaunchTime   time.Time
	Tags         map[string]string
	// Claim is the claim as Create returned it: everything a kubelet needs to register the node.
	Claim *karpv1.NodeClaim
}

func (i *Instance) deepCopy() Instance {
	out := *i
	out.Tags = make(map[string]string, len(i.Tags))
	for k, v := range i.Tags {
		out.Tags[k] = v
	}
	out.Claim = i.Claim.DeepCopy()
	return out
}

// Provider is a cloud.CloudProvider backed by memory. It is safe for concurrent use.
type Provider struct {
	clock       clock.Clock
	catalog     []*cloud.InstanceType
	clusterName string
	region      string
	joiner      Joiner
	delay       time.Duration

	mu        sync.Mutex
	launched  int
	instances map[string]*Instance // by provider ID
	byClaim   map[string]string    // idempotency key -> provider ID
	// ice is the injected shortage, which the cloud does not advertise; unavailable is what
	// launches have found out about it, shown in InstanceTypes for cloud.UnavailableTTL.
	ice         map[cloud.OfferingKey]bool
	unavailable *cloud.UnavailableOfferings
	// view is the catalog as InstanceTypes last gave it, built at viewVersion of unavailable:
	// handed out again, not copied, while no mark changes (callers only read it, as they read
	// the AWS provider's cached types), so the planner's per-pool cache keeps it too.
	viewMu      sync.Mutex
	view        []*cloud.InstanceType
	viewVersion uint64
	drift       map[string]cloud.DriftReason
	faults      map[Step][]Fault
	// notices wait for HandleInterruptions; reclaimed are instances taken at a notice's deadline.
	notices   chan cloud.Interruption
	reclaimed []string
}

var _ cloud.CloudProvider = (*Provider)(nil)

// New returns a provider with no instances.
func New(opts Options) *Provider {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	p := &Provider{
		clock:       opts.Clock,
		clusterName: opts.ClusterName,
		region:      opts.Region,
		joiner:      opts.Joiner,
		delay:       opts.RegistrationDelay,
		instances:   map[string]*Instance{},
		byClaim:     map[string]string{},
		ice:         map[cloud.OfferingKey]bool{},
		unavailable: cloud.NewUnavailableOfferings(opts.Clock),
		faults:      map[Step][]Fault{},
		drift:       map[string]cloud.DriftReason{},
		notices:     make(chan cloud.Interruption, 64),
	}
	if p.region == "" {
		p.region = Region
	}
	if opts.Catalog == nil {
		var err error
		if p.catalog, err = CatalogIn(p.region); err != nil {
			// A caller's mistake, not a condition of the cloud: callers validate a user's
			// region with RegionZones first.
			panic(fmt.Sprintf("fake.New: %v", err))
		}
	} else {
		for _, it := range opts.Catalog {
			p.catalog = append(p.catalog, copyInstanceType(it))
		}
		sort.Slice(p.catalog, func(i, j int) bool { return p.catalog[i].Name < p.catalog[j].Name })
	}
	return p
}

// Name implements cloud.CloudProvider.
func (p *Provider) Name() string { return ProviderName }

// InstanceTypes implements cloud.CloudProvider. The fake has no node classes, so the pool does not
// narrow the catalog.
func (p *Provider) InstanceTypes(ctx context.Context, _ *karpv1.NodePool) ([]*cloud.InstanceType, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return p.currentCatalog(), nil
}

// currentCatalog is the catalog with the capacity shortages launches found applied: a copy made
// when the marks change, shared until they change again. It needs no p.mu: the catalog is fixed
// at New and the unavailable offerings keep their own lock. Copying hundreds of types under p.mu
// held every launch (Create) behind the drift controller's reads of the catalog; copying them per
// call gave every round new types, which the planner's per-pool cache took for a new catalog.
func (p *Provider) currentCatalog() []*cloud.InstanceType {
	p.viewMu.Lock()
	defer p.viewMu.Unlock()
	version := p.unavailable.Version()
	if p.view != nil && version == p.viewVersion {
		return p.view
	}
	out := make([]*cloud.InstanceType, 0, len(p.catalog))
	for _, it := range p.catalog {
		c := copyInstanceType(it)
		for i, o := range c.Offerings {
			if p.unavailable.Has(cloud.OfferingKey{InstanceType: c.Name, Zone: o.Zone, CapacityType: o.CapacityType}) {
				c.Offerings[i].Available = false
			}
		}
		out = append(out, c)
	}
	p.view, p.viewVersion = out, version
	return out
}

// Create implements cloud.CloudProvider.
func (p *Provider) Create(ctx context.Context, claim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := p.fault(ctx, StepCreate); err != nil {
		return nil, err
	}
	launched, err := p.create(ctx, claim)
	if err != nil {
		return nil, err
	}
	// A fault here is the crash window that idempotency exists for: the instance runs, but the
	// caller never hears of it.
	if err := p.fault(ctx, StepAfterLaunch); err != nil {
		return nil, err
	}
	return launched, nil
}

func (p *Provider) create(ctx context.Context, claim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	// EC2's client token makes a retried launch return the first instance; the claim UID plays
	// that role, so a controller that crashed after launching cannot launch twice.
	key := idempotencyKey(claim)
	p.mu.Lock()
	if id, ok := p.byClaim[key]; ok {
		defer p.mu.Unlock()
		return p.instances[id].Claim.DeepCopy(), nil
	}
	ice := maps.Clone(p.ice)
	p.mu.Unlock()
	// Choosing walks every offering of the fixed catalog: outside p.mu, so that a burst of
	// launches (100 lifecycle workers) is not served one at a time.
	it, offering, err := p.choose(claim, ice)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if id, ok := p.byClaim[key]; ok { // a retry of the same launch won the race
		return p.instances[id].Claim.DeepCopy(), nil
	}
	p.launched++
	id := fmt.Sprintf("i-%017x", p.launched)
	inst := &Instance{
		ID:           id,
		ProviderID:   fmt.Sprintf("%s:///%s/%s", ProviderName, offering.Zone, id),
		InstanceType: it.Name,
		Zone:         offering.Zone,
		CapacityType: offering.CapacityType,
		PricePerHour: offering.PricePerHour,
		ClaimName:    claim.Name,
		ClaimUID:     claim.UID,
		NodePool:     claim.Labels[karpv1.NodePoolLabelKey],
		LaunchTime:   p.clock.Now(),
		Tags:         p.tags(claim),
	}
	inst.Claim = p.hydrate(claim, it, offering, inst)
	p.instances[inst.ProviderID] = inst
	p.byClaim[key] = inst.ProviderID
	klog.FromContext(ctx).V(2).Info("launched fake instance", "nodeclaim", claim.Name,
		"providerID", inst.ProviderID, "instanceType", it.Name, "zone", offering.Zone,
		"capacityType", offering.CapacityType, "price", offering.PricePerHour)
	if p.joiner != nil {
		go p.join(inst.deepCopy())
	}
	return inst.Claim.DeepCopy(), nil
}

// idempotencyKey falls back to the name for claims built in tests without a UID.
func idempotencyKey(claim *karpv1.NodeClaim) string {
	if claim.UID != "" {
		return "uid/" + string(claim.UID)
	}
	return "name/" + claim.Name
}

// tags are the AWS provider's, so garbage collection tests can tell instances apart by cluster and
// claim exactly as they would on EC2.
func (p *Provider) tags(claim *karpv1.NodeClaim) map[string]string {
	tags := map[string]string{awsv1.TagKeyNodeClaim: claim.Name}
	if pool := claim.Labels[karpv1.NodePoolLabelKey]; pool != "" {
		tags[awsv1.TagKeyNodePool] = pool
	}
	if ref := claim.Spec.NodeClassRef; ref != nil && ref.Name != "" {
		tags[awsv1.TagKeyNodeClass] = ref.Name
	}
	if p.clusterName != "" {
		tags[awsv1.TagKeyEKSClusterName] = p.clusterName
		tags["kubernetes.io/cluster/"+p.clusterName] = "owned"
	}
	return tags
}

// hydrate fills in what the cloud chose. The cloud's labels win over the claim's on a clash
// because they describe the machine that actually exists.
func (p *Provider) hydrate(claim *karpv1.NodeClaim, it *cloud.InstanceType, o cloud.Offering, inst *Instance) *karpv1.NodeClaim {
	out := claim.DeepCopy()
	out.Labels = offeringLabels(claim, it, o, p.region)
	out.Status.ProviderID = inst.ProviderID
	// The fake names nodes after their claims, so, like EC2's private DNS name, the node's name is
	// known at launch: pods can be nominated to it before it registers.
	out.Status.NodeName = claim.Name
	out.Status.ImageID = ImageID
	out.Status.Capacity = it.Capacity.DeepCopy()
	out.Status.Allocatable = it.Allocatable()
	return out
}

// offeringLabels is the label set a node launched from the offering would carry.
func offeringLabels(claim *karpv1.NodeClaim, it *cloud.InstanceType, o cloud.Offering, region string) map[string]string {
	labels := typeLabels(claim, it)
	setOfferingLabels(labels, o, region)
	return labels
}

// typeLabels is the label set of a node of the instance type, but for the offering's own labels.
func typeLabels(claim *karpv1.NodeClaim, it *cloud.InstanceType) map[string]string {
	labels := make(map[string]string, len(claim.Labels)+len(it.Labels)+3)
	maps.Copy(labels, claim.Labels)
	maps.Copy(labels, it.Labels)
	return labels
}

// setOfferingLabels sets the labels an offering decides (zone, region, capacity type) on a set
// typeLabels made.
func setOfferingLabels(labels map[string]string, o cloud.Offering, region string) {
	labels[corev1.LabelTopologyZone] = o.Zone
	labels[corev1.LabelTopologyRegion] = region
	labels[karpv1.CapacityTypeLabelKey] = o.CapacityType
}

// join waits out the boot time on the injected clock, then registers the node unless the
// instance was terminated meanwhile. Failures are retried as a kubelet would, but not forever,
// so a test that never fixes its joiner does not leak goroutines for the life of the process.
// The Create context is not used: it ends with the Create call, while the machine lives on.
func (p *Provider) join(inst Instance) {
	logger := klog.Background().WithValues("providerID", inst.ProviderID, "nodeclaim", inst.ClaimName)
	wait := p.delay
	for attempt := 0; attempt < 10; attempt++ {
		if wait > 0 {
			<-p.clock.After(wait)
		}
		if !p.exists(inst.ProviderID) {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := p.joiner.Join(ctx, inst)
		cancel()
		if err == nil {
			return
		}
		logger.Error(err, "fake kubelet could not register", "attempt", attempt)
		wait = time.Second << attempt
	}
}

func (p *Provider) exists(providerID string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.instances[providerID]
	return ok
}
