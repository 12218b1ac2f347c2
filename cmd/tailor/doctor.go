package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/doctor"
	"github.com/tailor-sh/tailor/pkg/generated/clientset/versioned"
)

type doctorFlags struct {
	kubeconfig string
	namespace  string
	output     string
	region     string
	endpoint   string
	lease      string
	timeout    time.Duration
	settings   doctor.Settings
}

func newDoctorCommand() *cobra.Command {
	f := &doctorFlags{}
	cmd := &cobra.Command{
		Use:   "doctor [-o json]",
		Short: "Check the cluster and the AWS account for what Tailor needs, one line per check with what to do",
		Long: `doctor reads the cluster (the kubeconfig) and the AWS account (the SDK's default credential chain;
only read calls) and reports, one line per check, ok, warn or fail and what to do:

  install             Tailor's Deployment, whose flags and ServiceAccount the other checks read
  node-role           per EC2NodeClass: spec.instanceProfile exists and holds a role, or spec.role
                      exists and is in the instance profile Tailor manages for it
  subnets             per selector term of each EC2NodeClass, the subnets it selects
  security-groups     the same for security groups
  amis                the images each class's alias or AMI selector terms resolve to
  interruption-queue  the queue (--interruption-queue), its access policy (EventBridge and SQS may
                      send) and the EventBridge rules for spot interruptions, rebalance
                      recommendations, state changes and scheduled changes
  iam-policy          Tailor's role allows every action of manifests/aws/iam-policy.json
  crds                the installed CRDs' versions and schemas against this binary's
  karpenter           no Karpenter controller still runs
  webhook             the serving certificate's validity and the caBundle that must verify it
  lease               the leader-election Lease has a holder that renews it
  opted-in-pods       pods of opted-in namespaces that name another scheduler

Against the sandbox's AWS emulator, its endpoint is read from the emulator-endpoint file beside
the kubeconfig. The exit status is 1 when any check fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDoctor(cmd.Context(), cmd.OutOrStdout(), f) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "the cluster's kubeconfig (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVarP(&f.namespace, "namespace", "n", "", "the namespace Tailor's Deployment is in (default: looked for in all)")
	fs.StringVarP(&f.output, "output", "o", "", "json for scripts (default: one line per check)")
	fs.StringVar(&f.region, "region", "", "the AWS region (default: Tailor's --aws-region, else the SDK's default chain)")
	fs.StringVar(&f.endpoint, "aws-endpoint", "", "send every AWS call to this endpoint, e.g. an emulator (default: the emulator-endpoint file beside the kubeconfig, else AWS)")
	fs.StringVar(&f.settings.ClusterName, "cluster-name", "", "the cluster name Tailor runs with (default: its Deployment's --cluster-name)")
	fs.StringVar(&f.settings.InterruptionQueue, "interruption-queue", "", "the interruption queue's name (default: its Deployment's --interruption-queue)")
	fs.StringVar(&f.settings.Role, "role", "", "Tailor's own IAM role, name or ARN (default: its ServiceAccount's "+doctor.RoleARNAnnotation+")")
	fs.StringVar(&f.settings.WebhookConfiguration, "webhook-configuration", "", "the MutatingWebhookConfiguration (default: its Deployment's --webhook-configuration)")
	fs.StringVar(&f.settings.WebhookSecret, "webhook-secret", "", "the Secret of the webhook's serving certificate, in Tailor's namespace (default: from its Deployment)")
	fs.StringVar(&f.lease, "lease", "", "the leader-election Lease as NAMESPACE/NAME (default: named like Tailor's Deployment)")
	fs.DurationVar(&f.timeout, "timeout", time.Minute, "give up on the checks after this long")
	return cmd
}

func runDoctor(ctx context.Context, out io.Writer, f *doctorFlags) error {
	if f.output != "" && f.output != "json" {
		return fmt.Errorf("-o %q: the only format is json", f.output)
	}
	if f.lease != "" {
		ns, name, ok := strings.Cut(f.lease, "/")
		if !ok || ns == "" || name == "" {
			return fmt.Errorf("--lease %q: want NAMESPACE/NAME", f.lease)
		}
		f.settings.LeaseNamespace, f.settings.LeaseName = ns, name
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()

	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	env := &doctor.Env{}
	if env.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if env.Tailor, err = versioned.NewForConfig(cfg); err != nil {
		return err
	}
	if env.Extensions, err = apiextensionsclient.NewForConfig(cfg); err != nil {
		return err
	}
	env.Settings, env.Install = doctor.Discover(ctx, env.Kube, f.namespace, f.settings)

	endpoint, region := f.endpoint, ""
	if endpoint == "" && f.kubeconfig != "" {
		endpoint, region = emulatorBeside(f.kubeconfig)
		if endpoint != "" {
			sandboxSettings(&env.Settings, f.kubeconfig)
		}
	}
	for _, r := range []string{f.region, env.Settings.Region} {
		if r != "" {
			region = r
			break
		}
	}
	awsCfg, err := tailoraws.SDKConfig(ctx, tailoraws.Options{Endpoint: endpoint, Region: region})
	switch {
	case err != nil:
		env.AWSError = err
	case awsCfg.Region == "":
		env.AWSError = fmt.Errorf("no AWS region: set AWS_REGION or --region")
	default:
		env.AWS = &awsCfg
	}

	results := doctor.Run(ctx, env)
	if f.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Results  []doctor.Result `json:"results"`
			Failures int             `json:"failures"`
		}{results, doctor.Failed(results)}); err != nil {
			return err
		}
	} else if err := doctor.Write(out, results); err != nil {
		return err
	}
	if n := doctor.Failed(results); n > 0 {
		return fmt.Errorf("%d check(s) failed", n)
	}
	return nil
}

// sandboxSettings fills what a sandbox on the AWS emulator runs Tailor with: it runs Tailor in
// its own process, with no Deployment to read the queue and cluster name from (and elects no
// leader unless it runs replicas).
func sandboxSettings(s *doctor.Settings, kubeconfig string) {
	if s.Deployment != "" {
		return
	}
	if s.InterruptionQueue == "" {
		s.InterruptionQueue = sandboxQueue
	}
	if raw, err := os.ReadFile(filepath.Join(filepath.Dir(kubeconfig), endpointFile)); err == nil && s.ClusterName == "" {
		if fields := strings.Fields(string(raw)); len(fields) > 2 {
			s.ClusterName = fields[2]
		}
	}
}
