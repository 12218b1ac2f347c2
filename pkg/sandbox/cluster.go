package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/test/utils/ktesting"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/tailor-sh/tailor/manifests"
	"github.com/tailor-sh/tailor/manifests/crds"
	"github.com/tailor-sh/tailor/pkg/cloud"
	clientset "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned"
	"github.com/tailor-sh/tailor/pkg/webhook"
)

// Options shape a sandbox cluster.
type Options struct {
	// Dir holds etcd's data, the kubeconfig and the scheduler configuration.
	Dir string
	// NewCloud builds the cloud Tailor launches capacity in, given a client of the new cluster
	// for the instances' kubelets to register with. Nodes must carry the kwok annotation (see
	// KwokNodeAnnotation) to become Ready.
	NewCloud func(kube kubernetes.Interface) cloud.CloudProvider
	Clock    clock.WithTicker
	// FeatureGates are turned on or off in every component of the cluster (e.g. GangGates); they
	// are the process's, set until Start's tb ends, so clusters running at once in one process
	// share one set of gates.
	FeatureGates map[string]bool
	// TailorArgs override the Tailor plugin's args of the shipped configuration, by JSON name
	// (e.g. "consolidationValidationPeriod": "1s"), so tests need not wait Karpenter's periods.
	TailorArgs map[string]any
	// Webhook, if set, is served by the scheduler as tailor-scheduler serves it, on a free
	// loopback port the sandbox picks (Cluster.WebhookURL), with a certificate valid for 127.0.0.1
	// as well, since the API server is pointed at it by URL.
	Webhook *webhook.Options
	// LeaderElection, if set, makes the schedulers elect a leader on one Lease (see StartStandby).
	LeaderElection *LeaderElection
	// CloudPerReplica makes every start of Tailor's scheduler build its cloud anew with NewCloud,
	// as a restarted process does: no cache, mark or queue consumer of the last one carries over.
	// Cluster.Cloud is then the cloud of the replica started last.
	CloudPerReplica bool
	// Outages puts an OutageProxy (Cluster.Outage) between the API server and Tailor's
	// schedulers, the workload controllers and kwok. The cluster's own clients (Kube, Tailor,
	// Config, Kubeconfig) and the cloud's reach it directly, so a test can watch through an outage.
	Outages bool
	// SchedulerConfig, if set, rewrites the config Tailor's schedulers reach the API server with
	// (through the outage proxy, if any), before it is written to their kubeconfig: a benchmark
	// points them at a proxy of its own that counts their requests, which no other client of the
	// sandbox then goes through.
	SchedulerConfig func(*rest.Config) (*rest.Config, error)
	// NoScheduler starts everything but Tailor's scheduler: the caller runs Tailor itself, as
	// a Helm release configures it (the chart's upgrade test), with Cluster.Cloud.
	NoScheduler bool
	// Throughput sets the client limits and parallelism of the workload controllers and kwok;
	// unset, they suit a laptop (see FleetThroughput for a benchmark at scale).
	Throughput Throughput
}

// Cluster is a running sandbox.
type Cluster struct {
	Config     *rest.Config
	Kube       kubernetes.Interface
	Tailor     clientset.Interface
	Kubeconfig string
	Cloud      cloud.CloudProvider
	// WebhookURL is where the webhook of Options.Webhook is served, for a
	// MutatingWebhookConfiguration's clientConfig.url.
	WebhookURL string
	// Outage, with Options.Outages, makes the API server stop answering the cluster's components.
	Outage *OutageProxy
	// schedKubeconfig is the kubeconfig the schedulers use: Kubeconfig, or the proxy's.
	schedKubeconfig string

	cp         *ControlPlane
	kubelets   *Kubelets
	cancel     context.CancelFunc
	dir        string
	clock      clock.WithTicker
	tailorArgs map[string]any
	webhook    *webhook.Options
	election   *LeaderElection
	// newCloud is Options.NewCloud when every replica builds its own cloud.
	newCloud func(kube kubernetes.Interface) cloud.CloudProvider

	mu         sync.Mutex
	replicas   []*replica
	replicaSeq int

	// devicesByPool caches, for the stand-in DRA driver, the devices of each NodePool's types.
	devicesMu     sync.Mutex
	devicesByPool map[string]poolDevices
}

// Start brings up the control plane, installs Tailor's CRDs, and starts the workload
// controllers, kwok and Tailor's scheduler.
func Start(ctx context.Context, tb ktesting.TB, opts Options) (*Cluster, error) {
	logger := klog.FromContext(ctx)
	began := time.Now()
	flags, err := controlPlaneFlags(tb, opts)
	if err != nil {
		return nil, err
	}
	cp, err := StartControlPlane(tb, filepath.Join(opts.Dir, "etcd"), flags...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &Cluster{Config: cp.Config, cp: cp, cancel: cancel, Kubeconfig: filepath.Join(opts.Dir, "kubeconfig"), dir: opts.Dir, clock: opts.Clock, tailorArgs: opts.TailorArgs, election: opts.LeaderElection}
	if err := c.start(ctx, opts); err != nil {
		c.Stop()
		return nil, err
	}
	logger.Info("Sandbox cluster is up", "kubeconfig", c.Kubeconfig, "took", time.Since(began).Round(time.Millisecond))
	return c, nil
}

// start brings up everything after the control plane: the CRDs, the kubeconfig, the workload
// controllers, kwok, the stand-in DRA driver, and Tailor's scheduler.
func (c *Cluster) start(ctx context.Context, opts Options) error {
	var err error
	if c.Kube, c.Tailor, err = clientsFor(c.cp.Config); err != nil {
		return err
	}
	if err := InstallCRDs(ctx, c.cp.Config); err != nil {
		return err
	}
	if err := WriteKubeconfig(c.cp.Config, c.Kubeconfig); err != nil {
		return err
	}
	components, err := c.componentsConfig(opts)
	if err != nil {
		return err
	}
	// Without the outage proxy the components share the cluster's clients (and their rate limits).
	componentKube, componentTailor := c.Kube, c.Tailor
	if components != c.cp.Config {
		if componentKube, componentTailor, err = clientsFor(components); err != nil {
			return err
		}
	}
	ctrlConfig, ctrlKube, kwokKube, err := opts.Throughput.clients(components, componentKube)
	if err != nil {
		return err
	}
	if err := StartWorkloadControllers(ctx, ctrlConfig, ctrlKube, opts.Throughput); err != nil {
		return err
	}
	if err := StartVolumeControllers(ctx, componentKube); err != nil {
		return err
	}
	if c.kubelets, err = startKubelets(ctx, kwokKube, opts.Throughput.kwokParallelism()); err != nil {
		return err
	}
	StartStartupTaintAgent(ctx, componentKube, componentTailor)
	if opts.CloudPerReplica {
		c.newCloud = opts.NewCloud
	} else {
		c.Cloud = opts.NewCloud(c.Kube)
	}
	if err := c.startDRADriver(ctx, componentKube); err != nil {
		return err
	}
	if opts.Webhook != nil {
		if err := c.placeWebhook(*opts.Webhook); err != nil {
			return err
		}
	}
	if opts.NoScheduler {
		return nil
	}
	return c.startScheduler(ctx)
}

// controlPlaneFlags are the API server's flags for opts: its feature gates, and what its throughput
// asks of it.
func controlPlaneFlags(tb ktesting.TB, opts Options) ([]string, error) {
	flags, err := gateFlags(tb, opts.FeatureGates)
	if err != nil {
		return nil, err
	}
	return append(flags, opts.Throughput.apiServerFlags()...), nil
}

// clientsFor are the clients of the built-in and of Tailor's resources through cfg. The control
// plane's config asks for protobuf, which the API server does not speak for custom resources.
func clientsFor(cfg *rest.Config) (kubernetes.Interface, clientset.Interface, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	asJSON := rest.CopyConfig(cfg)
	asJSON.ContentType = runtime.ContentTypeJSON
	tailor, err := clientset.NewForConfig(asJSON)
	if err != nil {
		return nil, nil, err
	}
	return kube, tailor, nil
}

// componentsConfig is the config the cluster's components (controllers, kwok, the scheduler)
// reach the API server through: through the outage proxy when opts asks for outages, else
// directly. It writes the scheduler's kubeconfig: that config, or opts.SchedulerConfig's.
func (c *Cluster) componentsConfig(opts Options) (*rest.Config, error) {
	components := c.cp.Config
	c.schedKubeconfig = c.Kubeconfig
	if opts.Outages {
		var err error
		if c.Outage, components, err = startOutageProxy(c.cp.Config); err != nil {
			return nil, err
		}
		c.schedKubeconfig = filepath.Join(opts.Dir, "scheduler-kubeconfig")
		if err := WriteKubeconfig(components, c.schedKubeconfig); err != nil {
			return nil, err
		}
	}
	if opts.SchedulerConfig != nil {
		schedConfig, err := opts.SchedulerConfig(rest.CopyConfig(components))
		if err != nil {
			return nil, err
		}
		c.schedKubeconfig = filepath.Join(opts.Dir, "scheduler-own-kubeconfig")
		if err := WriteKubeconfig(schedConfig, c.schedKubeconfig); err != nil {
			return nil, err
		}
	}
	return components, nil
}

// placeWebhook gives the admission webhook a free local port; the scheduler serves it.
func (c *Cluster) placeWebhook(w webhook.Options) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	w.Port, w.BindAddress, w.ExtraHosts = port, "127.0.0.1", append(slices.Clone(w.ExtraHosts), "127.0.0.1")
	c.webhook = &w
	c.WebhookURL = fmt.Sprintf("https://127.0.0.1:%d%s", port, webhook.Path)
	return nil
}

// KubeletStageErrors counts the stages kwok failed to play (see Kubelets.StageErrors).
func (c *Cluster) KubeletStageErrors() int64 { return c.kubelets.StageErrors() }

// StopScheduler stops Tailor's scheduler (every replica), and its webhook, as a crash or a
// rollout would, and waits for it; RestartScheduler starts it again.
func (c *Cluster) StopScheduler() { c.stopScheduler() }

// StartScheduler starts Tailor's scheduler after StopScheduler.
func (c *Cluster) StartScheduler(ctx context.Context) error { return c.startScheduler(ctx) }

// RestartScheduler stops Tailor's scheduler, wherever it is in its work, and starts a new one
// against the same cluster and cloud: the memory of the old one is lost, as in a crash.
func (c *Cluster) RestartScheduler(ctx context.Context) error {
	c.stopScheduler()
	return c.startScheduler(ctx)
}

// Stop stops the scheduler, then the control plane.
func (c *Cluster) Stop() {
	c.stopScheduler()
	c.cancel()
	if c.Outage != nil {
		c.Outage.Close()
	}
	c.cp.Stop()
}

// InstallCRDs creates Tailor's CRDs and waits until the API server serves them.
func InstallCRDs(ctx context.Context, cfg *rest.Config) error {
	all, err := crds.All()
	if err != nil {
		return err
	}
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, crd := range all {
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("installing CRD %s: %w", crd.Name, err)
		}
	}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, crd := range all {
			got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			if !apihelpers.IsCRDConditionTrue(got, apiextensionsv1.Established) {
				return false, nil
			}
		}
		return true, nil
	})
}

// WriteKubeconfig writes a kubeconfig for cfg to path, so kubectl and the scheduler can use it.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["sandbox"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, TLSServerName: cfg.ServerName, InsecureSkipTLSVerify: cfg.Insecure}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["sandbox"] = &clientcmdapi.Context{Cluster: "sandbox", AuthInfo: "admin"}
	kc.CurrentContext = "sandbox"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*kc, path)
}

// schedulerOptions are kube-scheduler's options for the shipped configuration, pointed at the
// sandbox, without a serving port, and with leader election only if election is set. Each
// replica writes its configuration to a file of its own.
func schedulerOptions(dir, replica, kubeconfig string, tailorArgs map[string]any, election *LeaderElection) (*options.Options, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal(manifests.SchedulerConfig, &cfg); err != nil {
		return nil, fmt.Errorf("reading the shipped scheduler configuration: %w", err)
	}
	if err := overrideTailorArgs(cfg, tailorArgs); err != nil {
		return nil, err
	}
	cfg["clientConnection"] = map[string]any{"kubeconfig": kubeconfig, "qps": 500, "burst": 1000}
	le, _ := cfg["leaderElection"].(map[string]any)
	if le == nil || election == nil {
		le = map[string]any{}
	}
	le["leaderElect"] = election != nil
	if election != nil {
		le["leaseDuration"] = election.LeaseDuration.String()
		le["renewDeadline"] = election.RenewDeadline.String()
		le["retryPeriod"] = election.RetryPeriod.String()
		le["resourceName"], le["resourceNamespace"] = LeaseName, LeaseNamespace
	}
	cfg["leaderElection"] = le
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, replica+"-scheduler-config.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return nil, err
	}
	opts := options.NewOptions()
	opts.ConfigFile = path
	opts.SecureServing.BindPort = 0
	return opts, nil
}

// overrideTailorArgs sets args of the Tailor plugin in the first profile's pluginConfig.
func overrideTailorArgs(cfg map[string]any, args map[string]any) error {
	if len(args) == 0 {
		return nil
	}
	profiles, _ := cfg["profiles"].([]any)
	if len(profiles) == 0 {
		return fmt.Errorf("the shipped scheduler configuration has no profile")
	}
	profile, _ := profiles[0].(map[string]any)
	pcs, _ := profile["pluginConfig"].([]any)
	for _, pc := range pcs {
		if m, ok := pc.(map[string]any); ok && m["name"] == "Tailor" {
			a, _ := m["args"].(map[string]any)
			if a == nil {
				a = map[string]any{}
				m["args"] = a
			}
			for k, v := range args {
				a[k] = v
			}
			return nil
		}
	}
	return fmt.Errorf("the shipped scheduler configuration has no pluginConfig for Tailor")
}

// QuickDisruptionArgs are Tailor plugin args (Options.TailorArgs) that shorten the disruption
// loop's fixed waits, Karpenter's 15 s consolidation validation and 10 s poll, to a second each:
// the decisions and the re-check are the same, tests and benchmarks just do not wait for them.
// A new map each call, so a caller may add to it.
func QuickDisruptionArgs() map[string]any {
	return map[string]any{"consolidationValidationPeriod": "1s", "disruptionPollInterval": "1s"}
}
