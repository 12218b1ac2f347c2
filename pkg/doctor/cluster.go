package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-sh/tailor/manifests/crds"
)

// The cluster's checks that need no AWS: the CRDs against the binary's, a Karpenter controller
// still running, and the leader Lease.

func checkInstall(_ context.Context, env *Env) []Result {
	if env.Install.Check == "" {
		return nil
	}
	return []Result{env.Install}
}

// checkCRDs compares each installed CRD's versions and schemas with the ones this binary embeds
// (manifests/crds): an upgrade that skipped the CRDs leaves fields the API server prunes.
func checkCRDs(ctx context.Context, env *Env) []Result {
	const check = "crds"
	want, err := crds.All()
	if err != nil {
		return []Result{fail(check, "", "rebuild tailor", "the embedded CRDs: %v", err)}
	}
	fix := "apply this version's CRDs: kubectl apply --server-side -f manifests/crds (helm upgrade leaves the chart's crds/ alone)"
	var out []Result
	for _, crd := range want {
		obj := "CRD " + crd.Name
		got, err := env.Extensions.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			out = append(out, fail(check, obj, fix, "not installed"))
			continue
		}
		if err != nil {
			out = append(out, fail(check, obj, "check that the kubeconfig may read CustomResourceDefinitions", "reading it: %v", err))
			continue
		}
		if diff := crdDiff(crd, got); diff != "" {
			out = append(out, fail(check, obj, fix, "differs from this binary's: %s", diff))
			continue
		}
		out = append(out, ok(check, obj, "versions %s match this binary's", strings.Join(versionNames(got), ", ")))
	}
	return out
}

func versionNames(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		name := v.Name
		if v.Storage {
			name += " (storage)"
		}
		out = append(out, name)
	}
	return out
}

// crdDiff says how the installed CRD differs from the wanted one: versions, then the schema's
// fields each side lacks; "" when they are the same.
func crdDiff(want, got *apiextensionsv1.CustomResourceDefinition) string {
	if w, g := versionNames(want), versionNames(got); !slices.Equal(w, g) {
		return fmt.Sprintf("versions %s, this binary's %s", strings.Join(g, ", "), strings.Join(w, ", "))
	}
	for i, wv := range want.Spec.Versions {
		gv := got.Spec.Versions[i]
		if wv.Schema == nil || gv.Schema == nil || wv.Schema.OpenAPIV3Schema == nil || gv.Schema.OpenAPIV3Schema == nil {
			if (wv.Schema == nil) != (gv.Schema == nil) {
				return fmt.Sprintf("version %s: schema present in only one", wv.Name)
			}
			continue
		}
		missing, extra := fieldsDiff(wv.Schema.OpenAPIV3Schema, gv.Schema.OpenAPIV3Schema, "")
		if len(missing)+len(extra) > 0 {
			var parts []string
			if len(missing) > 0 {
				parts = append(parts, "lacks "+firstFew(missing))
			}
			if len(extra) > 0 {
				parts = append(parts, "has fields this binary does not know: "+firstFew(extra))
			}
			return fmt.Sprintf("version %s %s", wv.Name, strings.Join(parts, "; "))
		}
		wj, _ := json.Marshal(wv.Schema)
		gj, _ := json.Marshal(gv.Schema)
		if string(wj) != string(gj) {
			return fmt.Sprintf("version %s: the schema's validation differs (same fields)", wv.Name)
		}
	}
	return ""
}

func firstFew(paths []string) string {
	if len(paths) > 3 {
		return strings.Join(paths[:3], ", ") + fmt.Sprintf(" and %d more", len(paths)-3)
	}
	return strings.Join(paths, ", ")
}

// fieldsDiff lists the property paths only in want (missing) and only in got (extra).
func fieldsDiff(want, got *apiextensionsv1.JSONSchemaProps, prefix string) (missing, extra []string) {
	wp, gp := want.Properties, got.Properties
	if want.Items != nil && want.Items.Schema != nil && got.Items != nil && got.Items.Schema != nil {
		m, e := fieldsDiff(want.Items.Schema, got.Items.Schema, prefix+"[]")
		missing, extra = append(missing, m...), append(extra, e...)
	}
	for _, k := range slices.Sorted(maps.Keys(wp)) {
		p := strings.TrimPrefix(prefix+"."+k, ".")
		g, ok := gp[k]
		if !ok {
			missing = append(missing, p)
			continue
		}
		w := wp[k]
		m, e := fieldsDiff(&w, &g, p)
		missing, extra = append(missing, m...), append(extra, e...)
	}
	for _, k := range slices.Sorted(maps.Keys(gp)) {
		if _, ok := wp[k]; !ok {
			extra = append(extra, strings.TrimPrefix(prefix+"."+k, "."))
		}
	}
	return missing, extra
}

// isKarpenterImage: Karpenter's controller image, e.g. .../karpenter/controller:1.6.0.
func isKarpenterImage(image string) bool {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return strings.HasSuffix(image, "karpenter/controller") || path.Base(image) == "karpenter"
}

// checkKarpenter finds a Karpenter controller that still runs: two autoscalers on one fleet
// launch for the same pods and consolidate each other's nodes.
func checkKarpenter(ctx context.Context, env *Env) []Result {
	const check = "karpenter"
	list, err := env.Kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return []Result{fail(check, "", "check that the kubeconfig may list Deployments", "listing Deployments: %v", err)}
	}
	var out []Result
	for _, d := range list.Items {
		karpenter := d.Labels["app.kubernetes.io/name"] == "karpenter"
		for _, c := range d.Spec.Template.Spec.Containers {
			karpenter = karpenter || isKarpenterImage(c.Image)
		}
		if !karpenter {
			continue
		}
		obj := "Deployment " + d.Namespace + "/" + d.Name
		if d.Spec.Replicas != nil && *d.Spec.Replicas == 0 && d.Status.Replicas == 0 {
			out = append(out, warn(check, obj, "uninstall it once the migration is done (helm uninstall karpenter)", "Karpenter's controller is scaled to zero"))
			continue
		}
		replicas := d.Status.Replicas
		if d.Spec.Replicas != nil && *d.Spec.Replicas > replicas {
			replicas = *d.Spec.Replicas
		}
		out = append(out, fail(check, obj,
			fmt.Sprintf("scale it to zero before Tailor manages the fleet (kubectl -n %s scale deployment %s --replicas=0; docs/getting-started/migrating-from-karpenter.md)", d.Namespace, d.Name),
			"Karpenter's controller is running (%d replica(s)): two autoscalers on one fleet launch for the same pods and consolidate each other's nodes", replicas))
	}
	if len(out) == 0 {
		out = append(out, ok(check, "", "no Karpenter controller runs"))
	}
	return out
}

// checkLease reads the leader-election Lease: someone holds it and renews it.
func checkLease(ctx context.Context, env *Env) []Result {
	const check = "lease"
	ns, name := env.Settings.LeaseNamespace, env.Settings.LeaseName
	if name == "" {
		return []Result{warn(check, "", "pass --lease NAMESPACE/NAME", "not checked: no Tailor Deployment found to name the Lease")}
	}
	obj := "Lease " + ns + "/" + name
	lease, err := env.Kube.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return []Result{fail(check, obj, "check Tailor's pods and logs: no replica has ever led (kubectl -n "+ns+" logs deployment/"+name+")", "no such Lease: no replica leads")}
	}
	if err != nil {
		return []Result{fail(check, obj, "check that the kubeconfig may read Leases in "+ns, "reading it: %v", err)}
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	if holder == "" {
		return []Result{fail(check, obj, "check Tailor's pods and logs", "held by no one: no replica leads, nothing is provisioned")}
	}
	if lease.Spec.RenewTime != nil && lease.Spec.LeaseDurationSeconds != nil {
		age := env.now().Sub(lease.Spec.RenewTime.Time)
		if age > time.Duration(*lease.Spec.LeaseDurationSeconds)*time.Second {
			return []Result{fail(check, obj, "check that pod "+holder+" runs; a standby takes over once the Lease expires",
				"held by %s but not renewed for %s (duration %ds)", holder, age.Round(time.Second), *lease.Spec.LeaseDurationSeconds)}
		}
		return []Result{ok(check, obj, "held by %s, renewed %s ago", holder, age.Round(time.Second))}
	}
	return []Result{ok(check, obj, "held by %s", holder)}
}
