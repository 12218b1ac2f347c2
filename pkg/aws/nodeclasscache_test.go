package aws_test

import (
	"context"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	awslisters "github.com/tailor-sh/tailor/pkg/generated/listers/aws/v1"
)

// Given the informer's lister, the provider reads its classes there and asks the API server
// (Options.NodeClasses) only for a class the cache does not hold yet, or once the lister is taken
// back; what it reads from the cache is a copy, so the cache's object stays as it was.
func TestNodeClassesAreReadFromTheInformersCache(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	ctx := context.Background()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	cached := e.class("default")
	if err := indexer.Add(cached); err != nil {
		t.Fatal(err)
	}
	e.provider.UseNodeClassLister(awslisters.NewEC2NodeClassLister(indexer))
	before := e.gets.Load()
	for range 3 {
		if _, err := e.provider.InstanceTypes(ctx, pool()); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.gets.Load() - before; got != 0 {
		t.Errorf("%d reads through the API server with the cache given; want none", got)
	}
	if cached.ResourceVersion != "" || len(cached.Annotations) != len(e.class("default").Annotations) {
		t.Errorf("the cached class was changed: %+v", cached.ObjectMeta)
	}

	fresh := defaultClass()
	fresh.Name = "fresh"
	e.setClass(fresh)
	freshPool := pool()
	freshPool.Spec.Template.Spec.NodeClassRef.Name = "fresh"
	_, _ = e.provider.InstanceTypes(ctx, freshPool) // not resolved yet, or resolved: either way read
	afterFresh := e.gets.Load()
	if afterFresh == before {
		t.Error("a class the cache lacks was not read from the API server")
	}

	e.provider.UseNodeClassLister(nil)
	if _, err := e.provider.InstanceTypes(ctx, pool()); err != nil {
		t.Fatal(err)
	}
	if e.gets.Load() == afterFresh {
		t.Error("with the lister taken back, the class was not read from the API server")
	}
}
