// Package awscloud is the AWS cloud of a sandbox: Tailor's real AWS provider against the
// in-process EC2 emulator, whose launched instances register as the sandbox cluster's Nodes.
// `tailor sandbox --cloud aws`, the e2e tests, the chaos day and the workload harness all start
// their AWS cloud here, so they run one wiring.
package awscloud

import (
	"context"
	"fmt"
	"sync/atomic"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/aws/emulator/register"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/controllers"
)

// Options say who the emulated account is set up for and how the provider reaches it.
type Options struct {
	// ClusterName names the discovery tags and the node role the account is seeded with.
	ClusterName string
	// Region is the emulated region; emulator.Region when empty.
	Region string
	// Clock drives the emulator and the provider; real time when nil.
	Clock clock.Clock
	// Queue, when set, is the interruption queue the provider consumes. With QueueRules the
	// emulator also gets its access policy and EventBridge rules, as `tailor doctor` expects of
	// a real account; otherwise the bare queue.
	Queue      string
	QueueRules bool
	// Provider holds the provider's other options (ClusterEndpoint, OnInterruption,
	// RetryMaxBackoff, ...); ClusterName, Region, Endpoint, Clock, NodeClasses and
	// InterruptionQueue are set from the above.
	Provider tailoraws.Options
}

// Cloud is the emulator with the provider options that reach it. The emulator and the options
// exist before the cluster does, so that their errors surface before it starts; the instances'
// kubelets and the provider's EC2NodeClass reads use the cluster's client once Bind hands it
// over.
type Cloud struct {
	Emulator *emulator.Emulator
	opts     tailoraws.Options
	kube     atomic.Pointer[kubeRef]
}

type kubeRef struct{ kubernetes.Interface }

// Start starts the emulator; Close stops it.
func Start(o Options) *Cloud {
	if o.Region == "" {
		o.Region = emulator.Region
	}
	c := &Cloud{}
	c.Emulator = emulator.Start(emulator.Options{Clock: o.Clock, ClusterName: o.ClusterName, Region: o.Region, OnLaunch: c.boot})
	switch {
	case o.Queue != "" && o.QueueRules:
		c.Emulator.SetUpInterruptionQueue(o.Queue)
	case o.Queue != "":
		c.Emulator.CreateQueue(o.Queue)
	}
	c.opts = o.Provider
	c.opts.ClusterName, c.opts.Region, c.opts.Endpoint, c.opts.Clock = o.ClusterName, o.Region, c.Emulator.URL(), o.Clock
	c.opts.InterruptionQueue = o.Queue
	c.opts.NodeClasses = c.nodeClass
	return c
}

// NewProvider builds a provider against the emulator: one for the process, or one per Tailor
// replica when restarts must drop its caches as a new process would.
func (c *Cloud) NewProvider(ctx context.Context) (*tailoraws.Provider, error) {
	p, err := tailoraws.New(ctx, c.opts)
	if err != nil {
		return nil, fmt.Errorf("building the AWS provider against the emulator at %s: %w", c.Emulator.URL(), err)
	}
	return p, nil
}

// Bind hands over the sandbox cluster's client: instances launched from now on register with
// it, and the provider reads EC2NodeClasses through it. Call it from sandbox.Options.NewCloud.
func (c *Cloud) Bind(kube kubernetes.Interface) { c.kube.Store(&kubeRef{kube}) }

// NewCloud is a sandbox.Options.NewCloud that binds the cluster and returns p.
func (c *Cloud) NewCloud(p cloud.CloudProvider) func(kubernetes.Interface) cloud.CloudProvider {
	return func(kube kubernetes.Interface) cloud.CloudProvider {
		c.Bind(kube)
		return p
	}
}

// RunControllers runs the provider's own controllers (EC2NodeClass status) until ctx ends,
// reporting to failed each that stops with an error before then.
func RunControllers(ctx context.Context, p *tailoraws.Provider, deps controllers.Deps, failed func(error)) {
	for _, ctrl := range p.Controllers(deps) {
		go func() {
			if err := ctrl.Run(ctx); err != nil && ctx.Err() == nil {
				failed(err)
			}
		}()
	}
}

// Close stops the emulator.
func (c *Cloud) Close() { c.Emulator.Close() }

// boot plays the kubelet of each instance the emulator launches: it registers the Node once the
// cluster is bound. An instance that boots before then never registers, as one whose kubelet
// cannot reach the API server.
func (c *Cloud) boot(l emulator.Launch) {
	if k := c.kube.Load(); k != nil {
		register.Nodes(k.Interface)(l)
	}
}

func (c *Cloud) nodeClass(ctx context.Context, name string) (*awsv1.EC2NodeClass, error) {
	k := c.kube.Load()
	if k == nil {
		return nil, fmt.Errorf("the sandbox cluster is not up yet")
	}
	return tailoraws.NodeClassesFromKube(k.Interface)(ctx, name)
}
