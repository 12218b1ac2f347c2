package aws

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	tailorinformers "github.com/tailor-sh/tailor/pkg/generated/informers/externalversions"
	awslisters "github.com/tailor-sh/tailor/pkg/generated/listers/aws/v1"
)

// The provider reads a NodePool's EC2NodeClass each time it is asked for the pool's instance
// types, its drift or its readiness: for every pool, in every provisioner round and disruption
// pass. Through Options.NodeClasses that is a GET each: with twenty NodePools, twenty GETs a
// round, one after another, which on a loaded API server took a round 2 to 6 s where its plan
// took 0.01 to 2 (TestKarpenterShapes, `-test.blockprofile`), and held a forceful removal's
// PlanNow past its 30 s. Once the operator's EC2NodeClass informer has synced, the provider reads
// its cache instead (UseNodeClassLister, which the provider's controllers call); a class the
// cache does not hold yet, made a moment ago, is asked of the API server as before.

// UseNodeClassLister makes the provider read EC2NodeClasses from lister; nil goes back to
// Options.NodeClasses.
func (p *Provider) UseNodeClassLister(lister awslisters.EC2NodeClassLister) {
	if lister == nil {
		p.classLister.Store(nil)
		return
	}
	p.classLister.Store(&lister)
}

// nodeClass reads the named EC2NodeClass: a copy of the cached one, or the API server's.
func (p *Provider) nodeClass(ctx context.Context, name string) (*awsv1.EC2NodeClass, error) {
	if l := p.classLister.Load(); l != nil {
		nc, err := (*l).Get(name)
		if err == nil {
			// The cache's object is shared with every reader: the provider's callers may change theirs.
			return nc.DeepCopy(), nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return p.opts.NodeClasses(ctx, name)
}

// nodeClassCache is the controller that hands the provider the EC2NodeClass informer's lister
// once it has synced, and takes it back when it stops (the replica no longer leads).
func (p *Provider) nodeClassCache(informers tailorinformers.SharedInformerFactory) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		classes := informers.AWS().V1().EC2NodeClasses()
		informer := classes.Informer()
		informers.Start(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("the EC2NodeClass informer did not sync")
		}
		p.UseNodeClassLister(classes.Lister())
		klog.FromContext(ctx).V(2).Info("Reading EC2NodeClasses from the informer's cache")
		<-ctx.Done()
		p.UseNodeClassLister(nil)
		return nil
	}
}
