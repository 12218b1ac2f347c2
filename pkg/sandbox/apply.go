package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// ManifestFiles expands paths (files or folders) into the YAML and JSON files they name, sorted
// within each folder so that applying is repeatable.
func ManifestFiles(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("manifest path: %w", err)
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch strings.ToLower(filepath.Ext(path)) {
			case ".yaml", ".yml", ".json":
				if !d.IsDir() {
					found = append(found, path)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	return files, nil
}

// ReadObjects decodes every object in the manifest files.
func ReadObjects(files []string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, f := range files {
		objs, err := readObjects(f)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

func readObjects(file string) ([]*unstructured.Unstructured, error) {
	r, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }() // read-only: closing cannot lose anything
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	for i := 1; ; i++ {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s, document %d: %w", file, i, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if obj.GetKind() == "" || obj.GetAPIVersion() == "" {
			return nil, fmt.Errorf("%s, document %d: apiVersion and kind are required", file, i)
		}
		out = append(out, obj)
	}
}

// ApplyFiles server-side-applies every object in the manifest files, in order. The API server's
// refusal of any object is returned with the object named. report, if set, hears of each object.
//
// A kind discovery does not know is looked up again for 5 s, or for a minute when a
// CustomResourceDefinition in the cluster defines it (see restMapping).
func ApplyFiles(ctx context.Context, cfg *rest.Config, paths []string, report func(string)) error {
	files, err := ManifestFiles(paths)
	if err != nil {
		return err
	}
	objs, err := ReadObjects(files)
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		mapping, err := restMapping(ctx, mapper, dyn, gvk)
		if err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		var res dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		name := obj.GetName()
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			if obj.GetNamespace() == "" {
				obj.SetNamespace(metav1.NamespaceDefault)
			}
			res = dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
			name = obj.GetNamespace() + "/" + name
		}
		if _, err := res.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "tailor-sandbox", Force: true}); err != nil {
			return fmt.Errorf("applying %s %s: %w", gvk.Kind, name, err)
		}
		if report != nil {
			report(fmt.Sprintf("%s %s applied", strings.ToLower(gvk.Kind), name))
		}
	}
	return nil
}

// restMapping finds where the API server serves gvk. A CRD applied earlier in the same run is not
// in the cached discovery yet; nor, for a while, is one the API server has just marked Established:
// its discovery document is updated after the condition, and later still on a loaded machine (CI
// once saw discovery leave out a kind for a whole minute after its CRD, installed when the sandbox
// started, was served). The API server serves an Established CRD's objects whatever discovery
// says, so the mapping is then read from the CRD itself (crdMapping). Otherwise discovery is asked
// afresh every discoveryPause: for up to crdDiscoveryWait while a CRD defining the kind exists,
// and for up to unknownKindWait otherwise, so that a misspelt kind fails soon.
func restMapping(ctx context.Context, mapper *restmapper.DeferredDiscoveryRESTMapper, dyn dynamic.Interface, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if !meta.IsNoMatchError(err) {
		return mapping, err
	}
	start := time.Now()
	for meta.IsNoMatchError(err) {
		fromCRD, defined := crdMapping(ctx, dyn, gvk)
		if fromCRD != nil {
			return fromCRD, nil
		}
		waited := time.Since(start)
		if waited >= crdDiscoveryWait {
			return nil, fmt.Errorf("a CustomResourceDefinition defines the kind, but the API server has not served it after %v (see the CRD's conditions): %w", crdDiscoveryWait, err)
		}
		if waited >= unknownKindWait && !defined {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(discoveryPause):
		}
		mapper.Reset()
		mapping, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	return mapping, err
}

// crdMapping looks for a CustomResourceDefinition in the cluster that defines gvk's kind: defined
// says whether one does, and the mapping is where its objects are served, once it is Established
// and serves gvk's version. A failed lookup answers nothing: the caller waits on discovery.
func crdMapping(ctx context.Context, dyn dynamic.Interface, gvk schema.GroupVersionKind) (mapping *meta.RESTMapping, defined bool) {
	if gvk.Group == "" {
		return nil, false
	}
	crds, err := dyn.Resource(crdResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, false
	}
	for _, item := range crds.Items {
		var crd apiextensionsv1.CustomResourceDefinition
		if runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &crd) != nil ||
			crd.Spec.Group != gvk.Group || crd.Spec.Names.Kind != gvk.Kind {
			continue
		}
		if !apihelpers.IsCRDConditionTrue(&crd, apiextensionsv1.Established) || !apihelpers.HasServedCRDVersion(&crd, gvk.Version) {
			return nil, true
		}
		// The API server serves the names it accepted, which can differ from those asked for.
		plural := crd.Status.AcceptedNames.Plural
		if plural == "" {
			plural = crd.Spec.Names.Plural
		}
		scope := meta.RESTScopeRoot
		if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
			scope = meta.RESTScopeNamespace
		}
		return &meta.RESTMapping{Resource: gvk.GroupVersion().WithResource(plural), GroupVersionKind: gvk, Scope: scope}, true
	}
	return nil, false
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

const (
	discoveryPause   = 250 * time.Millisecond
	unknownKindWait  = 5 * time.Second
	crdDiscoveryWait = 60 * time.Second
)
