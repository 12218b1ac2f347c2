// Package client gives Tailor typed access to its own cluster-scoped resources (NodePools,
// NodeClaims, EC2NodeClasses) on client-go's REST client, and typed shared informers for them.
// It plays the part of a generated clientset without the generated code.
package client

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Object is what every Tailor resource is: a runtime object with object metadata.
type Object interface {
	runtime.Object
	metav1.Object
}

// Typed reads and writes one cluster-scoped resource as T.
type Typed[T Object] struct {
	rest     rest.Interface
	codec    runtime.ParameterCodec
	resource string
	newObj   func() T
	newList  func() runtime.Object
	items    func(runtime.Object) []T
}

// Resource returns the plural resource name, e.g. "nodeclaims".
func (c *Typed[T]) Resource() string { return c.resource }

// Get fetches one object by name.
func (c *Typed[T]) Get(ctx context.Context, name string) (T, error) {
	out := c.newObj()
	err := c.rest.Get().Resource(c.resource).Name(name).Do(ctx).Into(out)
	return out, err
}

// List fetches every object and the resource version of the list.
func (c *Typed[T]) List(ctx context.Context, opts metav1.ListOptions) ([]T, string, error) {
	list := c.newList()
	if err := c.rest.Get().Resource(c.resource).VersionedParams(&opts, c.codec).Do(ctx).Into(list); err != nil {
		return nil, "", err
	}
	meta, err := metaOfList(list)
	if err != nil {
		return nil, "", err
	}
	return c.items(list), meta, nil
}

// Watch opens a watch on the resource.
func (c *Typed[T]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	return c.rest.Get().Resource(c.resource).VersionedParams(&opts, c.codec).Timeout(timeout).Watch(ctx)
}

// Create writes a new object and returns what the server stored.
func (c *Typed[T]) Create(ctx context.Context, obj T) (T, error) {
	out := c.newObj()
	err := c.rest.Post().Resource(c.resource).Body(obj).Do(ctx).Into(out)
	return out, err
}

// Update replaces the object's spec and metadata (not its status).
func (c *Typed[T]) Update(ctx context.Context, obj T) (T, error) {
	out := c.newObj()
	err := c.rest.Put().Resource(c.resource).Name(obj.GetName()).Body(obj).Do(ctx).Into(out)
	return out, err
}

// UpdateStatus replaces the object's status subresource.
func (c *Typed[T]) UpdateStatus(ctx context.Context, obj T) (T, error) {
	out := c.newObj()
	err := c.rest.Put().Resource(c.resource).Name(obj.GetName()).SubResource("status").Body(obj).Do(ctx).Into(out)
	return out, err
}

// Patch applies a patch to the object, or to one of its subresources.
func (c *Typed[T]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, subresources ...string) (T, error) {
	out := c.newObj()
	err := c.rest.Patch(pt).Resource(c.resource).Name(name).SubResource(subresources...).Body(data).Do(ctx).Into(out)
	return out, err
}

// Delete deletes the object by name.
func (c *Typed[T]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return c.rest.Delete().Resource(c.resource).Name(name).Body(&opts).Do(ctx).Error()
}

// NewInformer returns a shared informer that keeps typed objects in its store.
func (c *Typed[T]) NewInformer(resync time.Duration) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := c.newList()
			err := c.rest.Get().Resource(c.resource).VersionedParams(&opts, c.codec).Do(ctx).Into(list)
			return list, err
		},
		WatchFuncWithContext: c.Watch,
	}
	return cache.NewSharedIndexInformer(lw, c.newObj(), resync, cache.Indexers{})
}

func metaOfList(list runtime.Object) (string, error) {
	lm, ok := list.(metav1.ListInterface)
	if !ok {
		return "", fmt.Errorf("%T is not a list", list)
	}
	return lm.GetResourceVersion(), nil
}

// Lister reads typed objects from an informer's store.
type Lister[T Object] struct{ Store cache.Store }

// List returns every object in the store.
func (l Lister[T]) List() []T {
	items := l.Store.List()
	out := make([]T, 0, len(items))
	for _, item := range items {
		if obj, ok := item.(T); ok {
			out = append(out, obj)
		}
	}
	return out
}

// Get returns the object with that name, and whether it exists.
func (l Lister[T]) Get(name string) (T, bool) {
	item, ok, err := l.Store.GetByKey(name)
	var zero T
	if err != nil || !ok {
		return zero, false
	}
	obj, ok := item.(T)
	return obj, ok
}
