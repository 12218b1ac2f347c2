package aws

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"k8s.io/utils/clock"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	"github.com/tailor-sh/tailor/pkg/aws/interruption/eventbridge"
	"github.com/tailor-sh/tailor/pkg/aws/sdkhttp"
)

// NodeClassGetter returns the EC2NodeClass of that name (from an informer or the API server).
type NodeClassGetter func(ctx context.Context, name string) (*awsv1.EC2NodeClass, error)

// Options configure the AWS provider. ClusterName and NodeClasses are required.
type Options struct {
	// ClusterName tags everything Tailor launches, so List and garbage collection find exactly
	// this cluster's instances.
	ClusterName string
	// ClusterEndpoint, ClusterCABundle (base64 PEM), ClusterDNS and ServiceCIDR go into user data
	// so nodes can join.
	ClusterEndpoint string
	ClusterCABundle string
	ClusterDNS      []string
	ServiceCIDR     string
	// KubernetesVersion (e.g. "1.36") picks the EKS-optimized AMIs behind aliases.
	KubernetesVersion string
	NodeClasses       NodeClassGetter

	// Region defaults to the SDK's (AWS_REGION, profile), or us-west-2 with an Endpoint.
	Region string
	// Endpoint, when set, sends every API call there (the emulator) with static test credentials.
	// Empty means AWS itself, with the default credential chain.
	Endpoint string

	// InterruptionQueue is the name of the SQS queue EventBridge sends EC2 interruption notices
	// to. When set, HandleInterruptions consumes it; empty means no interruption notices.
	InterruptionQueue string
	// OnInterruption, when set, is told about every interruption notice after it was handled,
	// with the provider ID of the instance it concerned ("" when EC2 does not know it); for
	// narration and tests.
	OnInterruption func(ctx context.Context, ev eventbridge.Event, providerID string)

	// Clock drives every cache and TTL; real time when nil.
	Clock clock.Clock
	// VMMemoryOverheadPercent is the share of an instance's memory the hypervisor is assumed to
	// keep; 0.075 (Karpenter's default) when zero.
	VMMemoryOverheadPercent float64
	// ReservedENIs are ENIs kept out of max-pods, e.g. for a CNI's own use.
	ReservedENIs int
	// UnavailableOfferingsTTL is how long an offering that ran out of capacity is avoided; 3 min
	// when zero. It is an option because users find Karpenter's fixed 3 minutes wrong both ways.
	UnavailableOfferingsTTL time.Duration
	// RetryMaxAttempts and RetryMaxBackoff tune the SDK's retryer (adaptive mode: the standard
	// retries plus a client-side rate limiter that slows every call on throttling, such as EC2's
	// RequestLimitExceeded); 5 and 20 s when zero.
	RetryMaxAttempts int
	RetryMaxBackoff  time.Duration
	// CapacityReservationRefreshInterval is how often the capacity reservations of node classes
	// that select some are described again (so a cancelled or expired one drifts its nodes), and
	// how often nodes in Capacity Blocks are checked against the blocks' end; 1 minute when zero,
	// Karpenter's cadence for both.
	CapacityReservationRefreshInterval time.Duration
}

// Defaults Tailor shares with Karpenter's AWS provider.
const (
	DefaultVMMemoryOverheadPercent = 0.075
	DefaultUnavailableOfferingsTTL = 3 * time.Minute
	DefaultKubernetesVersion       = "1.36"
	// CatalogRefreshInterval is how often instance types, offerings and prices are re-read.
	CatalogRefreshInterval = 12 * time.Hour
)

func (o *Options) defaults() error {
	if o.ClusterName == "" {
		return fmt.Errorf("aws provider: ClusterName is required: it tags every instance so Tailor can find its own")
	}
	if o.NodeClasses == nil {
		return fmt.Errorf("aws provider: NodeClasses is required to read EC2NodeClasses")
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.KubernetesVersion == "" {
		o.KubernetesVersion = DefaultKubernetesVersion
	}
	if o.VMMemoryOverheadPercent == 0 {
		o.VMMemoryOverheadPercent = DefaultVMMemoryOverheadPercent
	}
	if o.UnavailableOfferingsTTL == 0 {
		o.UnavailableOfferingsTTL = DefaultUnavailableOfferingsTTL
	}
	if o.RetryMaxAttempts == 0 {
		o.RetryMaxAttempts = 5
	}
	if o.RetryMaxBackoff == 0 {
		o.RetryMaxBackoff = 20 * time.Second
	}
	if o.CapacityReservationRefreshInterval == 0 {
		o.CapacityReservationRefreshInterval = time.Minute
	}
	if o.Endpoint != "" && o.Region == "" {
		o.Region = "us-west-2"
	}
	return nil
}

// SDKConfig builds the aws.Config every client shares. It is exported so other AWS consumers
// (the interruption queue) are configured exactly like the provider.
func SDKConfig(ctx context.Context, o Options) (aws.Config, error) {
	if o.RetryMaxAttempts == 0 {
		o.RetryMaxAttempts = 5
	}
	if o.RetryMaxBackoff == 0 {
		o.RetryMaxBackoff = 20 * time.Second
	}
	// Adaptive mode, not standard: standard backs off each call's own retries, but every new call
	// (a launch, a describe of another controller) still goes out at once, so a throttled fleet
	// of controllers keeps EC2's account-wide rate limit exceeded. Adaptive mode adds a client-side
	// token bucket that every attempt of every call on the client draws from; each throttling
	// answer cuts its rate (CUBIC, down to 0.5 requests/s) and successes raise it again. The
	// SDK calls this function once per client, so each service backs off on its own throttling:
	// EC2 being throttled never slows the interruption queue's SQS polls.
	retryer := func() aws.Retryer {
		return retry.NewAdaptiveMode(func(ao *retry.AdaptiveModeOptions) {
			ao.StandardOptions = append(ao.StandardOptions, func(so *retry.StandardOptions) {
				so.MaxAttempts = o.RetryMaxAttempts
				so.MaxBackoff = o.RetryMaxBackoff
				so.Backoff = retry.NewExponentialJitterBackoff(o.RetryMaxBackoff)
			})
		})
	}
	if o.Endpoint != "" {
		region := o.Region
		if region == "" {
			region = "us-west-2"
		}
		return aws.Config{
			Region:       region,
			BaseEndpoint: aws.String(o.Endpoint),
			Credentials:  credentials.NewStaticCredentialsProvider("AKIDTAILORTEST", "tailor-test-secret", ""),
			Retryer:      retryer,
			HTTPClient:   sdkhttp.OwnBodies{Next: awshttp.NewBuildableClient()},
		}, nil
	}
	opts := []func(*config.LoadOptions) error{config.WithRetryer(retryer)}
	if o.Region != "" {
		opts = append(opts, config.WithRegion(o.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("loading AWS configuration (credentials, region): %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, fmt.Errorf("no AWS region: set AWS_REGION, a region in the shared AWS config, or --aws-region")
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = awshttp.NewBuildableClient()
	}
	cfg.HTTPClient = sdkhttp.OwnBodies{Next: cfg.HTTPClient}
	return cfg, nil
}

// pricingRegion is where the Pricing API is served for a region's prices.
func pricingRegion(region string) string {
	switch {
	case strings.HasPrefix(region, "ap-"):
		return "ap-south-1"
	case strings.HasPrefix(region, "eu-"):
		return "eu-central-1"
	case strings.HasPrefix(region, "cn-"):
		return "cn-northwest-1"
	default:
		return "us-east-1"
	}
}
