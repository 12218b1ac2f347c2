package charts

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// chartDir is the chart, relative to this package.
const chartDir = "tailor"

// files is the chart, embedded so that tests elsewhere in the module (test/e2e) render the very
// templates that ship, whatever their working directory.
//
//go:embed all:tailor
var files embed.FS

// Chart is the Tailor chart as Helm loads it. Helm's directory loader would apply .helmignore;
// the chart's ignores match nothing that is embedded, so loading the files is the same.
var Chart = sync.OnceValues(func() (*chart.Chart, error) {
	var buffered []*archive.BufferedFile
	err := fs.WalkDir(files, chartDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := files.ReadFile(path)
		if err != nil {
			return err
		}
		buffered = append(buffered, &archive.BufferedFile{Name: strings.TrimPrefix(path, chartDir+"/"), Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return loader.LoadFiles(buffered)
})

// Manifest is what `helm install` would send for one release.
type Manifest struct {
	Objects []*unstructured.Unstructured // in Helm's install order
	Notes   string                       // NOTES.txt, rendered
	Text    string                       // every manifest, separated by ---
}

// Render renders the chart as `helm install NAME --namespace NAMESPACE` does: values coalesced
// with the chart's, templates rendered by Helm's engine, manifests sorted in Helm's install
// order. apiVersions are what the cluster serves beyond Helm's defaults (what
// .Capabilities.APIVersions.Has answers).
func Render(name, namespace string, values map[string]any, apiVersions ...string) (*Manifest, error) {
	chrt, err := Chart()
	if err != nil {
		return nil, err
	}
	caps := common.DefaultCapabilities.Copy()
	caps.APIVersions = append(caps.APIVersions, apiVersions...)
	top, err := util.ToRenderValues(chrt, values, common.ReleaseOptions{Name: name, Namespace: namespace, Revision: 1, IsInstall: true}, caps)
	if err != nil {
		return nil, err
	}
	rendered, err := engine.Render(chrt, top)
	if err != nil {
		return nil, err
	}
	out := &Manifest{}
	for file, content := range rendered {
		if strings.HasSuffix(file, "NOTES.txt") {
			out.Notes = content
			delete(rendered, file)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(rendered, caps.APIVersions, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	if len(hooks) > 0 {
		return nil, fmt.Errorf("the chart has %d hooks; it should have none", len(hooks))
	}
	var all strings.Builder
	for _, m := range manifests {
		all.WriteString(m.Content + "\n---\n")
		obj := &unstructured.Unstructured{}
		if err := yaml.UnmarshalStrict([]byte(m.Content), &obj.Object); err != nil {
			return nil, fmt.Errorf("%s: not YAML: %w", m.Name, err)
		}
		if obj.Object == nil {
			continue
		}
		if obj.GetAPIVersion() == "" || obj.GetKind() == "" || obj.GetName() == "" {
			return nil, fmt.Errorf("%s: an object without apiVersion, kind or name:\n%s", m.Name, m.Content)
		}
		out.Objects = append(out.Objects, obj)
	}
	out.Text = all.String()
	return out, nil
}
