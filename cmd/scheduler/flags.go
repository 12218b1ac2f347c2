package main

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/webhook"
)

// defaultFakeClusterName names the cluster where it need not be given: the fake cloud and an AWS
// emulator, which the sandbox sets up for this name.
const defaultFakeClusterName = "tailor"

// tailorFlags are tailor-scheduler's own flags, the "Tailor flags" section of --help.
type tailorFlags struct {
	cloud       string
	clusterName string
	aws         awsFlags
	webhook     *webhook.Options
}

// awsFlags configure --cloud aws.
type awsFlags struct {
	endpoint, region, clusterEndpoint, interruptionQueue string
}

// newTailorFlags returns the production defaults: AWS, and the webhook on its port.
func newTailorFlags() *tailorFlags {
	return &tailorFlags{cloud: "aws", webhook: webhook.NewOptions()}
}

func (f *tailorFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.cloud, "cloud", f.cloud, "cloud to launch capacity in: aws (EC2) or fake (simulated, in memory; for tests)")
	fs.StringVar(&f.clusterName, "cluster-name", f.clusterName, "name of the cluster, used to tag and find its instances; with --cloud aws the EKS cluster name, required (default with --cloud fake or --aws-endpoint: "+defaultFakeClusterName+")")
	fs.StringVar(&f.aws.endpoint, "aws-endpoint", "", "with --cloud aws: send every AWS API call to this URL (an emulator) with test credentials; empty means AWS itself, with the default credential chain")
	fs.StringVar(&f.aws.region, "aws-region", "", "with --cloud aws: the AWS region (default: AWS_REGION or the shared config's)")
	fs.StringVar(&f.aws.clusterEndpoint, "cluster-endpoint", "", "with --cloud aws: the API server URL new nodes join (the EKS cluster endpoint); required against AWS")
	fs.StringVar(&f.aws.interruptionQueue, "interruption-queue", "", "with --cloud aws: name of the SQS queue EventBridge sends EC2 interruption notices to; empty disables interruption handling")
	f.webhook.AddFlags(fs)
}

// validate names every flag that is missing or wrong, before anything starts: a scheduler that
// would fail only once it leads, or once the first node is launched, is found out too late.
func (f *tailorFlags) validate() error {
	var errs []error
	switch f.cloud {
	case "fake":
	case "aws":
		if f.aws.endpoint != "" {
			break // an emulator: the sandbox's account needs neither
		}
		if f.clusterName == "" {
			errs = append(errs, fmt.Errorf("--cluster-name is required with --cloud=aws: the EKS cluster's name, which Tailor tags its instances with and finds subnets and security groups by (karpenter.sh/discovery); see aws eks list-clusters"))
		}
		if f.aws.clusterEndpoint == "" {
			errs = append(errs, fmt.Errorf("--cluster-endpoint is required with --cloud=aws: the API server URL new nodes join (aws eks describe-cluster --name CLUSTER --query cluster.endpoint)"))
		}
	default:
		errs = append(errs, fmt.Errorf("--cloud=%q: unknown cloud; the choices are aws and fake", f.cloud))
	}
	if f.aws.region != "" {
		if err := fake.CheckRegion(f.aws.region); err != nil {
			errs = append(errs, fmt.Errorf("--aws-region: %w", err))
		}
	}
	if err := f.webhook.Validate(); err != nil {
		errs = append(errs, err)
	}
	// One mistake a line.
	return errors.Join(errs...)
}

// cluster is the cluster name to use.
func (f *tailorFlags) cluster() string {
	if f.clusterName == "" {
		return defaultFakeClusterName
	}
	return f.clusterName
}
