package apis

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/scheme"
)

// ForEvents returns a copy of obj that carries its group, version and kind. Decoding strips them,
// and an event recorder cannot refer to a Tailor object without them: its scheme (client-go's)
// does not know Tailor's types, so it would drop the Event. The generated clientset's scheme knows
// both of Tailor's groups; objects it does not know are returned as they are.
func ForEvents(obj runtime.Object) runtime.Object {
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return obj
	}
	out := obj.DeepCopyObject()
	out.GetObjectKind().SetGroupVersionKind(gvks[0])
	return out
}
