package apis_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/tailor-sh/tailor/manifests/crds"
)

// admitter runs a custom resource through the same steps the API server applies to a create or
// update: defaulting, OpenAPI schema validation and CEL rules (transition rules on update).
type admitter struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// admitters builds one admitter per CRD kind, after checking each CRD the way the API server
// checks it on install (structural schema, CEL compilation and estimated cost).
func admitters(t *testing.T) map[string]*admitter {
	t.Helper()
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*admitter{}
	for _, crd := range all {
		internal := &apiextensions.CustomResourceDefinition{}
		if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
			t.Fatal(err)
		}
		// The API server fills storedVersions on install; validation insists on it.
		internal.Status.StoredVersions = []string{internal.Spec.Versions[0].Name}
		if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), internal); len(errs) > 0 {
			t.Fatalf("CRD %s would be refused by the API server: %v", crd.Name, errs.ToAggregate())
		}
		if len(crd.Spec.Versions) != 1 {
			t.Fatalf("CRD %s: want exactly one version", crd.Name)
		}
		props := &apiextensions.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, props, nil); err != nil {
			t.Fatal(err)
		}
		structural, err := structuralschema.NewStructural(props)
		if err != nil {
			t.Fatal(err)
		}
		validator, _, err := apiservervalidation.NewSchemaValidator(props)
		if err != nil {
			t.Fatal(err)
		}
		out[crd.Spec.Names.Kind] = &admitter{
			structural: structural,
			schema:     validator,
			cel:        cel.NewValidator(structural, true, celconfig.PerCallLimit),
		}
	}
	return out
}

// admit defaults obj in place and returns every error admission would report. old is nil for a
// create.
func (a *admitter) admit(obj, old map[string]interface{}) field.ErrorList {
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, a.structural)
	structuraldefaulting.Default(obj, a.structural)
	var errs field.ErrorList
	if old == nil {
		errs = apiservervalidation.ValidateCustomResource(nil, obj, a.schema)
	} else {
		errs = apiservervalidation.ValidateCustomResourceUpdate(nil, obj, old, a.schema)
	}
	var oldObj interface{}
	if old != nil {
		oldObj = old
	}
	celErrs, _ := a.cel.Validate(context.Background(), nil, a.structural, obj, oldObj, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

// unknownFields returns the paths of fields the CRD schema would prune from obj.
func (a *admitter) unknownFields(obj map[string]interface{}) []string {
	return pruning.PruneWithOptions(obj, a.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
}

// fromYAML decodes a YAML document into the generic form the API server validates.
func fromYAML(t *testing.T, doc string) map[string]interface{} {
	t.Helper()
	// Like the API server: integral JSON numbers become int64, which CEL needs for int fields.
	data, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]interface{}{}
	if err := utiljson.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// expectRefused checks that errs is not empty and that one of them names the field and carries
// the message fragment.
func expectRefused(t *testing.T, errs field.ErrorList, fieldPath, fragment string) {
	t.Helper()
	if len(errs) == 0 {
		t.Fatalf("admitted, want refusal of %s (%q)", fieldPath, fragment)
	}
	for _, err := range errs {
		if strings.Contains(err.Field, fieldPath) && strings.Contains(err.Error(), fragment) {
			return
		}
	}
	t.Fatalf("no error on %s containing %q; got:\n%v", fieldPath, fragment, errs.ToAggregate())
}

// withPatch returns a copy of base with a JSON merge patch (RFC 7386, written as YAML) applied:
// maps merge, anything else (lists included) replaces, and null deletes.
func withPatch(t *testing.T, base map[string]interface{}, patch string) map[string]interface{} {
	t.Helper()
	out := fromYAML(t, mustYAML(t, base))
	mergeInto(out, fromYAML(t, patch))
	return out
}

func mergeInto(dst, patch map[string]interface{}) {
	for k, v := range patch {
		if v == nil {
			delete(dst, k)
			continue
		}
		pm, pok := v.(map[string]interface{})
		dm, dok := dst[k].(map[string]interface{})
		if pok && dok {
			mergeInto(dm, pm)
			continue
		}
		dst[k] = v
	}
}

func mustYAML(t *testing.T, obj interface{}) string {
	t.Helper()
	b, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
