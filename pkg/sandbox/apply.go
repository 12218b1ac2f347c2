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

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
// A kind discovery does not know is looked up again for discoveryWaits × discoveryPause (5 s).
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
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		// A CRD applied earlier in the same run is not in the cached discovery yet; nor, for a
		// moment, is one the API server has just marked Established: its discovery document is
		// updated after the condition. Ask afresh for a few seconds before calling the kind unknown.
		for wait := 0; meta.IsNoMatchError(err) && wait < discoveryWaits; wait++ {
			if wait > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(discoveryPause):
				}
			}
			mapper.Reset()
			mapping, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
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

const (
	discoveryWaits = 20
	discoveryPause = 250 * time.Millisecond
)
