// Package gc removes what a crash or an outside hand left behind: instances that carry Tailor's
// tags but have no NodeClaim, NodeClaims whose instance is gone, and Nodes whose NodeClaim is gone.
package gc

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/controller"
	karpclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/karpenter/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/metrics"
)

// Grace is how long an instance, claim or node must have been seen unmatched before it is
// collected: a launch creates the instance first and writes the claim's status a moment later, and
// a node can register in between. The collector times this itself, with its own clock, so skew
// against the API server's timestamps does not matter.
const Grace = 30 * time.Second

// Interval is how often the collector looks.
const Interval = 10 * time.Second

// Options are what the collector reads and writes.
type Options struct {
	Kube        kubernetes.Interface
	NodeClaims  karpclient.NodeClaimInterface
	ClaimLister karplisters.NodeClaimLister
	Nodes       corelisters.NodeLister
	Cloud       cloud.CloudProvider
	Clock       clock.WithTicker
}

// Collector runs the three collections in turn.
type Collector struct {
	opts Options
	// unmatched remembers when each instance, claim or node was first seen without its match;
	// keys are prefixed by kind. It is memory only: after a restart the grace starts again.
	unmatched map[string]time.Time
}

// New returns a Collector.
func New(opts Options) *Collector { return &Collector{opts: opts, unmatched: map[string]time.Time{}} }

// due records that key is unmatched now and reports whether it has been for the whole grace.
func (g *Collector) due(seen map[string]bool, key string, now time.Time) bool {
	seen[key] = true
	first, ok := g.unmatched[key]
	if !ok {
		g.unmatched[key] = now
		return false
	}
	return now.Sub(first) >= Grace
}

// Run collects every Interval until ctx ends.
func (g *Collector) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("gc")
	ctx = klog.NewContext(ctx, logger)
	controller.Every(ctx, g.opts.Clock, Interval, func() {
		if err := g.Collect(ctx); err != nil {
			logger.Error(err, "Garbage collection failed; retrying next round")
		}
	})
}

// Collect runs one round.
func (g *Collector) Collect(ctx context.Context) error {
	done := metrics.CloudCall("nodeclaim.garbagecollection", "List", g.opts.Cloud)
	instances, err := g.opts.Cloud.List(ctx)
	done(err)
	if err != nil {
		return err
	}
	claims, err := g.opts.ClaimLister.List(labels.Everything())
	if err != nil {
		return err
	}
	byProviderID := map[string]*karpv1.NodeClaim{}
	byName := map[string]bool{}
	for _, c := range claims {
		byName[c.Name] = true
		if c.Status.ProviderID != "" {
			byProviderID[c.Status.ProviderID] = c
		}
	}
	now := g.opts.Clock.Now()
	logger := klog.FromContext(ctx)
	live := map[string]bool{}
	seen := map[string]bool{}
	// Whatever was matched this round, or is gone, starts its grace afresh next time.
	defer func() {
		for key := range g.unmatched {
			if !seen[key] {
				delete(g.unmatched, key)
			}
		}
	}()
	api := &apiClaims{list: g.opts.NodeClaims.List}
	for _, inst := range instances {
		live[inst.Status.ProviderID] = true
		if byProviderID[inst.Status.ProviderID] != nil || byName[inst.Name] || !g.due(seen, "instance/"+inst.Status.ProviderID, now) {
			continue
		}
		if found, err := api.has(ctx, inst.Name, inst.Status.ProviderID); err != nil {
			return err
		} else if found {
			continue
		}
		done := metrics.CloudCall("nodeclaim.garbagecollection", "Delete", g.opts.Cloud)
		err := g.opts.Cloud.Delete(ctx, inst)
		done(err)
		if err != nil && !cloud.IsNotFound(err) {
			return err
		}
		logger.Info("Terminated instance that has no NodeClaim", "providerID", inst.Status.ProviderID, "nodeClaim", inst.Name)
	}
	for _, c := range claims {
		if c.DeletionTimestamp != nil || c.Status.ProviderID == "" || live[c.Status.ProviderID] || !g.due(seen, "claim/"+c.Name, now) {
			continue
		}
		// List may lag a launch; ask about this instance directly before giving up on it.
		done := metrics.CloudCall("nodeclaim.garbagecollection", "Get", g.opts.Cloud)
		_, err := g.opts.Cloud.Get(ctx, c.Status.ProviderID)
		done(err)
		if !cloud.IsNotFound(err) {
			continue
		}
		fresh := c.DeepCopy()
		fresh.SetCondition(karpv1.ConditionTypeDisruptionReason, metav1.ConditionTrue, "GarbageCollected", "the instance is gone", now)
		if _, err := g.opts.NodeClaims.UpdateStatus(ctx, fresh, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if err := g.opts.NodeClaims.Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		metrics.NodeClaimDisrupted(c, "garbage_collected", "") // Karpenter's reason for the same
		logger.Info("Deleted NodeClaim whose instance is gone", "nodeClaim", c.Name, "providerID", c.Status.ProviderID)
	}
	return g.collectNodes(ctx, byProviderID, api, seen, now)
}

// apiClaims reads the NodeClaims from the API server, once a round and only when something is
// about to be collected. The informer's cache can trail the API server by longer than Grace
// when it is loaded (hundreds of launches at once): a node registered for a claim whose status
// the cache has not caught up with looks unmatched, and must not be deleted for it.
type apiClaims struct {
	list         func(context.Context, metav1.ListOptions) (*karpv1.NodeClaimList, error)
	names, byPID map[string]bool
}

// has reports whether the API server holds a claim of that name or provider ID.
func (a *apiClaims) has(ctx context.Context, name, providerID string) (bool, error) {
	if a.names == nil {
		list, err := a.list(ctx, metav1.ListOptions{})
		if err != nil {
			return false, fmt.Errorf("listing NodeClaims to confirm what the cache says is unmatched: %w", err)
		}
		a.names, a.byPID = map[string]bool{}, map[string]bool{}
		for _, c := range list.Items {
			a.names[c.Name] = true
			if c.Status.ProviderID != "" {
				a.byPID[c.Status.ProviderID] = true
			}
		}
	}
	return (name != "" && a.names[name]) || (providerID != "" && a.byPID[providerID]), nil
}

// collectNodes deletes Nodes that Tailor launched (they carry its NodePool label) whose NodeClaim
// is gone. Deleting goes through the node's finalizer, so the node is still drained first.
func (g *Collector) collectNodes(ctx context.Context, byProviderID map[string]*karpv1.NodeClaim, api *apiClaims, seen map[string]bool, now time.Time) error {
	nodes, err := g.opts.Nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if _, ours := n.Labels[karpv1.NodePoolLabelKey]; !ours || n.DeletionTimestamp != nil || n.Spec.ProviderID == "" {
			continue
		}
		if byProviderID[n.Spec.ProviderID] != nil || !g.due(seen, "node/"+n.Name, now) {
			continue
		}
		if found, err := api.has(ctx, "", n.Spec.ProviderID); err != nil {
			return err
		} else if found {
			continue
		}
		if err := g.opts.Kube.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		klog.FromContext(ctx).Info("Deleted node whose NodeClaim is gone", "node", n.Name)
	}
	return nil
}
