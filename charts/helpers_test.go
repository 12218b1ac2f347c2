package charts

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// required are the values every install must set (docs/getting-started/install.md).
const required = `
settings:
  clusterName: prod-east
  clusterEndpoint: https://ABCDEF.gr7.us-east-1.eks.amazonaws.com
`

// release is one `helm install`: a release name and namespace, values, and the API versions the
// cluster serves beyond Helm's defaults (what .Capabilities.APIVersions.Has answers).
type release struct {
	label           string // names the release in subtests
	name, namespace string
	values          string
	apiVersions     []string
}

func (r release) withDefaults() release {
	if r.name == "" {
		r.name = "tailor"
	}
	if r.namespace == "" {
		r.namespace = "tailor"
	}
	return r
}

// rendered is what `helm install` would send: manifests in Helm's install order.
type rendered struct {
	release  release
	objects  []*unstructured.Unstructured
	notes    string
	manifest string
}

// renderRelease renders the chart for r (Render, with the test's values parsed).
func renderRelease(r release) (*rendered, error) {
	r = r.withDefaults()
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(r.values), &vals); err != nil {
		return nil, fmt.Errorf("test values: %w", err)
	}
	m, err := Render(r.name, r.namespace, vals, r.apiVersions...)
	if err != nil {
		return nil, err
	}
	return &rendered{release: r, objects: m.Objects, notes: m.Notes, manifest: m.Text}, nil
}

func render(t *testing.T, r release) *rendered {
	t.Helper()
	out, err := renderRelease(r)
	if err != nil {
		t.Fatalf("rendering the chart with values\n%s\n: %v", r.values, err)
	}
	return out
}

// fullname is the name the chart gives most objects: the release name, with "-tailor" unless
// the release name holds it already.
func (r *rendered) fullname() string {
	if strings.Contains(r.release.name, "tailor") {
		return r.release.name
	}
	return r.release.name + "-tailor"
}

// find returns the one object of that kind and name, failing the test if there is none.
func (r *rendered) find(t *testing.T, kind, name string) *unstructured.Unstructured {
	t.Helper()
	if o := r.lookup(kind, name); o != nil {
		return o
	}
	t.Fatalf("no %s %s among the rendered objects: %v", kind, name, r.kinds())
	return nil
}

func (r *rendered) lookup(kind, name string) *unstructured.Unstructured {
	for _, o := range r.objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func (r *rendered) ofKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.objects {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

func (r *rendered) kinds() []string {
	set := map[string]bool{}
	for _, o := range r.objects {
		set[o.GetKind()+"/"+o.GetName()] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// strict decodes with unknown and duplicate fields as errors, so a misspelled field in a template
// fails here rather than being dropped by the API server.
var strict = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

// typed decodes obj strictly into the Go type of its kind, into out.
func typed(t *testing.T, obj *unstructured.Unstructured, out runtime.Object) {
	t.Helper()
	data, err := yaml.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := strict.Decode(data, nil, out); err != nil {
		t.Fatalf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}
