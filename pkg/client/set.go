package client

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// Scheme knows Tailor's API types.
var Scheme = runtime.NewScheme()

func init() {
	for _, add := range []func(*runtime.Scheme) error{karpv1.AddToScheme, awsv1.AddToScheme} {
		if err := add(Scheme); err != nil {
			panic(err)
		}
	}
}

// Set holds a typed client for each of Tailor's resources.
type Set struct {
	NodePools      *Typed[*karpv1.NodePool]
	NodeClaims     *Typed[*karpv1.NodeClaim]
	EC2NodeClasses *Typed[*awsv1.EC2NodeClass]
}

// NewSet builds the clients from a REST config.
func NewSet(cfg *rest.Config) (*Set, error) {
	karp, err := restFor(cfg, karpv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	aws, err := restFor(cfg, awsv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	codec := runtime.NewParameterCodec(Scheme)
	return &Set{
		NodePools: &Typed[*karpv1.NodePool]{rest: karp, codec: codec, resource: "nodepools",
			newObj:  func() *karpv1.NodePool { return &karpv1.NodePool{} },
			newList: func() runtime.Object { return &karpv1.NodePoolList{} },
			items:   func(l runtime.Object) []*karpv1.NodePool { return pointers(l.(*karpv1.NodePoolList).Items) }},
		NodeClaims: &Typed[*karpv1.NodeClaim]{rest: karp, codec: codec, resource: "nodeclaims",
			newObj:  func() *karpv1.NodeClaim { return &karpv1.NodeClaim{} },
			newList: func() runtime.Object { return &karpv1.NodeClaimList{} },
			items:   func(l runtime.Object) []*karpv1.NodeClaim { return pointers(l.(*karpv1.NodeClaimList).Items) }},
		EC2NodeClasses: &Typed[*awsv1.EC2NodeClass]{rest: aws, codec: codec, resource: "ec2nodeclasses",
			newObj:  func() *awsv1.EC2NodeClass { return &awsv1.EC2NodeClass{} },
			newList: func() runtime.Object { return &awsv1.EC2NodeClassList{} },
			items:   func(l runtime.Object) []*awsv1.EC2NodeClass { return pointers(l.(*awsv1.EC2NodeClassList).Items) }},
	}, nil
}

func restFor(base *rest.Config, gv schema.GroupVersion) (*rest.RESTClient, error) {
	cfg := rest.CopyConfig(base)
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(Scheme).WithoutConversion()
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	c, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the REST client for %s: %w", gv, err)
	}
	return c, nil
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// ForEvents returns a copy of obj that carries its group, version and kind. Decoding strips them,
// and an event recorder cannot refer to a Tailor object without them: its scheme does not know
// Tailor's types, so it would drop the Event.
func ForEvents(obj runtime.Object) runtime.Object {
	gvks, _, err := Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return obj
	}
	out := obj.DeepCopyObject()
	out.GetObjectKind().SetGroupVersionKind(gvks[0])
	return out
}
