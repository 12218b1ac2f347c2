// Package nodeclass keeps EC2NodeClass status current: what the selector terms resolve to
// (subnets, security groups, AMIs, the instance profile) and the conditions, with Ready saying
// what failed. People read it with kubectl; drift is measured against it.
//
// The provider does not wait for this status to launch (it resolves node classes itself, with a
// short cache), so a stopped controller makes the status stale, never the launches wrong.
package nodeclass

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	"github.com/tailor-sh/tailor/pkg/controller"
	clientset "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned"
	awsclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/aws/v1"
	awsinformers "github.com/tailor-sh/tailor/pkg/generated/informers/externalversions/aws/v1"
	awslisters "github.com/tailor-sh/tailor/pkg/generated/listers/aws/v1"
)

// ResolveFunc returns a copy of the node class with its status resolved against the cloud. An
// error means the cloud could not be asked; what the cloud said no to is a False condition.
type ResolveFunc func(ctx context.Context, nc *awsv1.EC2NodeClass) (*awsv1.EC2NodeClass, error)

// Defaults for Options.
const (
	// DefaultInterval is how often a Ready class is resolved again, to notice new AMIs and
	// changed subnets and security groups (Karpenter re-reads AMIs and groups every 5 minutes).
	DefaultInterval = 5 * time.Minute
	// DefaultNotReadyInterval is the sooner retry for a class that is not Ready, so fixing the
	// cloud side (creating the role, tagging a subnet) shows within a minute.
	DefaultNotReadyInterval = time.Minute
)

// Options configure a Controller. Clients and Resolve are required.
type Options struct {
	Clients          clientset.Interface
	Resolve          ResolveFunc
	Clock            clock.WithTicker
	Interval         time.Duration
	NotReadyInterval time.Duration
	// ReservationInterval, when shorter, is how often a Ready class that selects capacity
	// reservations is resolved again: reservations are cancelled and expire, and the nodes in
	// them drift only once the status says so.
	ReservationInterval time.Duration
	// Hash, when set, gives the class's static hash and its version, stamped on the class as
	// annotations (as Karpenter does) so that kubectl shows what launches are compared with.
	Hash func(nc *awsv1.EC2NodeClass) (hash, version string)
}

// Controller writes EC2NodeClass status on every add and spec change, and periodically.
type Controller struct {
	opts        Options
	informer    cache.SharedIndexInformer
	lister      awslisters.EC2NodeClassLister
	nodeClasses awsclient.EC2NodeClassInterface
	queue       *controller.Queue
}

// New builds the controller; nothing runs until Run.
func New(opts Options) (*Controller, error) {
	if opts.Clients == nil || opts.Resolve == nil {
		return nil, fmt.Errorf("the EC2NodeClass controller needs the EC2NodeClass client and a resolver")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.NotReadyInterval == 0 {
		opts.NotReadyInterval = DefaultNotReadyInterval
	}
	// An informer of its own rather than a shared one: the controller runs in hosts (the operator,
	// the sandbox) that share no informer factory with it, and starts and stops it with itself.
	c := &Controller{opts: opts, nodeClasses: opts.Clients.AWSV1().EC2NodeClasses(),
		informer: awsinformers.NewEC2NodeClassInformer(opts.Clients, 0, cache.Indexers{})}
	c.lister = awslisters.NewEC2NodeClassLister(c.informer.GetIndexer())
	c.queue = controller.NewQueue("ec2nodeclass", opts.Clock, c.reconcile)
	_, err := c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueue(obj) },
		// Only spec changes (a new generation) and hash annotations someone else wrote (Karpenter,
		// before it was scaled down): the controller's own status writes come back as updates
		// too, and must not start another round.
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*awsv1.EC2NodeClass)
			n, ok2 := newObj.(*awsv1.EC2NodeClass)
			if ok1 && ok2 && (o.Generation != n.Generation || !c.hashCurrent(n)) {
				c.enqueue(n)
			}
		},
	})
	return c, err
}

func (c *Controller) enqueue(obj any) {
	if nc, ok := obj.(*awsv1.EC2NodeClass); ok {
		c.queue.Add(nc.Name)
	}
}

// Run resolves node classes until ctx ends. One worker is enough: clusters have a handful of
// classes, and serial resolution keeps the AWS call rate low.
func (c *Controller) Run(ctx context.Context) error {
	go c.informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.informer.HasSynced) {
		return nil // stopped before it synced
	}
	c.queue.Run(ctx, 1)
	return nil
}

func (c *Controller) reconcile(ctx context.Context, name string) (time.Duration, error) {
	nc, err := c.lister.Get(name)
	if err != nil || nc.DeletionTimestamp != nil {
		return 0, nil
	}
	resolved, err := c.opts.Resolve(ctx, nc.DeepCopy())
	if err != nil {
		return 0, fmt.Errorf("resolving EC2NodeClass %s: %w", name, err)
	}
	if !equality.Semantic.DeepEqual(nc.Status, resolved.Status) {
		if _, err := c.nodeClasses.UpdateStatus(ctx, resolved, metav1.UpdateOptions{}); err != nil {
			return 0, fmt.Errorf("writing EC2NodeClass %s status: %w", name, err)
		}
		logReadiness(ctx, nc, resolved)
	}
	if err := c.stampHash(ctx, nc); err != nil {
		return 0, err
	}
	return c.opts.requeueAfter(resolved), nil
}

// requeueAfter is when to resolve the class again: soon while it is not Ready, more often than
// other classes when it selects capacity reservations.
func (o Options) requeueAfter(resolved *awsv1.EC2NodeClass) time.Duration {
	ready := resolved.GetCondition(awsv1.ConditionTypeReady)
	switch {
	case ready == nil || ready.Status != metav1.ConditionTrue:
		return o.NotReadyInterval
	case len(resolved.Spec.CapacityReservationSelectorTerms) > 0 && o.ReservationInterval > 0 && o.ReservationInterval < o.Interval:
		return o.ReservationInterval
	}
	return o.Interval
}

// stampHash writes the class's hash annotations when they are not current.
func (c *Controller) stampHash(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	if c.hashCurrent(nc) {
		return nil
	}
	hash, version := c.opts.Hash(nc)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		awsv1.AnnotationEC2NodeClassHash: hash, awsv1.AnnotationEC2NodeClassHashVersion: version}}})
	if err != nil {
		return err
	}
	// Claims first: once the class carries the new version, this is not called again.
	if nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] != version {
		if err := c.restampClaims(ctx, nc, hash, version); err != nil {
			return err
		}
	}
	if _, err := c.nodeClasses.Patch(ctx, nc.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("stamping the hash on EC2NodeClass %s: %w", nc.Name, err)
	}
	return nil
}

// hashCurrent says whether the class carries its current hash and version (true when the
// controller stamps none).
func (c *Controller) hashCurrent(nc *awsv1.EC2NodeClass) bool {
	if c.opts.Hash == nil {
		return true
	}
	hash, version := c.opts.Hash(nc)
	return nc.Annotations[awsv1.AnnotationEC2NodeClassHash] == hash && nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] == version
}

// logReadiness logs a change of Ready, with the reason when it is not.
func logReadiness(ctx context.Context, before, after *awsv1.EC2NodeClass) {
	was, now := before.GetCondition(awsv1.ConditionTypeReady), after.GetCondition(awsv1.ConditionTypeReady)
	if now == nil || (was != nil && was.Status == now.Status && was.Reason == now.Reason) {
		return
	}
	logger := klog.FromContext(ctx).WithValues("ec2nodeclass", after.Name)
	if now.Status == metav1.ConditionTrue {
		logger.Info("EC2NodeClass is Ready", "subnets", len(after.Status.Subnets), "securityGroups", len(after.Status.SecurityGroups),
			"amis", len(after.Status.AMIs), "instanceProfile", after.Status.InstanceProfile)
		return
	}
	logger.Info("EC2NodeClass is not Ready", "reason", now.Reason, "message", now.Message)
}
