package schedperf

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/configz"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/tailor-sh/tailor/manifests"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/cloud/fake/kubelet"
	"github.com/tailor-sh/tailor/pkg/operator"
	"github.com/tailor-sh/tailor/pkg/sandbox"
)

// scheduler is one of the two schedulers compared.
type scheduler struct {
	// name labels the benchmark's metrics: "vanilla" or "tailor".
	name string
	// schedulerName is the profile its pods select.
	schedulerName string
	// tailor makes it tailor-scheduler's configuration (the shipped one, the Tailor plugin
	// enabled) rather than kube-scheduler's default one.
	tailor bool
}

var (
	vanilla = scheduler{name: "vanilla", schedulerName: "default-scheduler"}
	tailor  = scheduler{name: "tailor", schedulerName: "tailor", tailor: true}
)

// writeConfig writes s's KubeSchedulerConfiguration into dir. Both get the same client limits
// (binding is an API call a pod) and no leader election; everything else is each one's default:
// kube-scheduler's stock profile, or the profile tailor-scheduler ships.
func (s scheduler) writeConfig(dir, kubeconfig string) (string, error) {
	cfg := map[string]any{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
	if s.tailor {
		if err := yaml.Unmarshal(manifests.SchedulerConfig, &cfg); err != nil {
			return "", fmt.Errorf("reading the shipped scheduler configuration: %w", err)
		}
	}
	cfg["clientConnection"] = map[string]any{"kubeconfig": kubeconfig, "qps": 500, "burst": 1000}
	cfg["leaderElection"] = map[string]any{"leaderElect": false}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, s.name+"-scheduler-config.yaml")
	return path, os.WriteFile(path, data, 0o600)
}

// startInProcess runs s in this process until the returned stop is called: operator.Setup
// (kube-scheduler's app.Setup with Tailor's cap on Event writes, so that only the profile
// differs) and app.Run for vanilla, operator.Run (the same, with the Tailor plugin and Tailor's
// provisioner and controllers) for tailor. It returns once Tailor has started (vanilla: at once),
// and when.
func (s scheduler) startInProcess(ctx context.Context, b *testing.B, c *cluster) (stop func(), startedAt time.Time) {
	b.Helper()
	path, err := s.writeConfig(c.dir, c.kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	opts := options.NewOptions()
	opts.ConfigFile = path
	opts.SecureServing.BindPort = 0
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	started := make(chan struct{})
	if s.tailor {
		newCloud := func(kube kubernetes.Interface) (cloud.CloudProvider, error) {
			return fake.New(fake.Options{Clock: clock.RealClock{}, ClusterName: "tailor", Joiner: &kubelet.Joiner{Client: kube}}), nil
		}
		go func() {
			done <- operator.Run(ctx, opts, newCloud, clock.RealClock{}, operator.WithStarted(func() { close(started) }))
		}()
	} else {
		cc, sched, err := operator.Setup(ctx, opts)
		if err != nil {
			cancel()
			b.Fatalf("setting up kube-scheduler: %v", err)
		}
		close(started)
		go func() {
			err := app.Run(ctx, cc, sched)
			// app.Run registers its configuration process-wide; the next scheduler registers its own.
			configz.Delete("componentconfig")
			done <- err
		}()
	}
	select {
	case <-started:
		startedAt = time.Now()
	case err := <-done:
		cancel()
		b.Fatalf("%s scheduler stopped before it started: %v", s.name, err)
	case <-time.After(2 * time.Minute):
		cancel()
		b.Fatalf("%s scheduler did not start within 2 minutes", s.name)
	}
	return func() {
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			b.Errorf("%s scheduler: %v", s.name, err)
		}
	}, startedAt
}

// applyNodePool gives Tailor's provisioner a NodePool and an EC2NodeClass (the examples'), as in
// a user's cluster: it runs, and finds nothing to launch, since every pod fits a node.
func (c *cluster) applyNodePool(ctx context.Context) error {
	return sandbox.ApplyFiles(ctx, c.config, []string{"../../examples/ec2nodeclass.yaml", "../../examples/nodepool.yaml"}, nil)
}
