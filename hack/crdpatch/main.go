// Command crdpatch adds to the generated CRDs the OpenAPI validation that kubebuilder markers
// cannot express, as Karpenter does with yq after controller-gen. Two kinds of field need it:
//
//   - fields of types we do not own (corev1.Taint inside taints and startupTaints), whose key,
//     value and effect formats are known to the kubelet but not to the schema controller-gen emits;
//   - values of string maps (template labels, kubelet reservations and eviction thresholds),
//     which markers cannot reach and which CEL cannot check within the API server's cost budget
//     because the values have no maximum length.
//
// OpenAPI patterns cost nothing against the CEL budget, so they are the right tool here.
// Usage (from hack/generate.sh): go run ./hack/crdpatch manifests/crds
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

const (
	qualifiedName = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	labelValue    = `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	quantity      = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`
	// percentage or quantity, as the kubelet accepts for eviction thresholds
	threshold = `^(([0-9]{1,2}(\.[0-9]{1,2})?|100(\.0{1,2})?)%|(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?)$`
)

// patch sets schema keywords on the node at path. Path elements are property names, "[]" for
// array items and "{}" for map values (additionalProperties).
type patch struct {
	path []string
	set  map[string]interface{}
}

func taintPatches(prefix ...string) []patch {
	var out []patch
	for _, list := range []string{"taints", "startupTaints"} {
		field := func(name string) []string {
			return append(append([]string{}, prefix...), list, "[]", name)
		}
		out = append(out,
			patch{path: field("key"), set: map[string]interface{}{"minLength": 1, "maxLength": 316, "pattern": qualifiedName}},
			patch{path: field("value"), set: map[string]interface{}{"maxLength": 63, "pattern": labelValue}},
			patch{path: field("effect"), set: map[string]interface{}{"enum": []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}}},
		)
	}
	return out
}

var patches = map[string][]patch{
	"karpenter.sh_nodepools.yaml": append(taintPatches("spec", "template", "spec"),
		patch{path: []string{"spec", "template", "metadata", "labels", "{}"}, set: map[string]interface{}{"maxLength": 63, "pattern": labelValue}},
	),
	"karpenter.sh_nodeclaims.yaml": taintPatches("spec"),
	"karpenter.k8s.aws_ec2nodeclasses.yaml": {
		{path: []string{"spec", "kubelet", "kubeReserved", "{}"}, set: map[string]interface{}{"pattern": quantity}},
		{path: []string{"spec", "kubelet", "systemReserved", "{}"}, set: map[string]interface{}{"pattern": quantity}},
		{path: []string{"spec", "kubelet", "evictionHard", "{}"}, set: map[string]interface{}{"pattern": threshold}},
		{path: []string{"spec", "kubelet", "evictionSoft", "{}"}, set: map[string]interface{}{"pattern": threshold}},
	},
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crdpatch <crd directory>")
		os.Exit(2)
	}
	for file, ps := range patches {
		if err := apply(filepath.Join(os.Args[1], file), ps); err != nil {
			fmt.Fprintf(os.Stderr, "crdpatch: %s: %v\n", file, err)
			os.Exit(1)
		}
	}
}

func apply(file string, ps []patch) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	crd := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		return err
	}
	versions, _ := dig(crd, "spec", "versions").([]interface{})
	if len(versions) == 0 {
		return fmt.Errorf("no versions")
	}
	for _, v := range versions {
		root, _ := dig(v.(map[string]interface{}), "schema", "openAPIV3Schema").(map[string]interface{})
		for _, p := range ps {
			node, err := walk(root, p.path)
			if err != nil {
				return fmt.Errorf("%s: %w", strings.Join(p.path, "."), err)
			}
			for k, val := range p.set {
				node[k] = val
			}
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	// Keep controller-gen's document marker so regenerating is a no-op diff for git.
	return os.WriteFile(file, append([]byte("---\n"), out...), 0o644)
}

// walk follows a schema path; it fails rather than creating nodes, so a renamed field breaks
// generation instead of silently losing its validation.
func walk(schema map[string]interface{}, path []string) (map[string]interface{}, error) {
	node := schema
	for _, elem := range path {
		var next interface{}
		switch elem {
		case "[]":
			next = node["items"]
		case "{}":
			next = node["additionalProperties"]
		default:
			next = dig(node, "properties", elem)
		}
		m, ok := next.(map[string]interface{})
		if !ok {
			return nil, fmt.Errorf("no schema at %q", elem)
		}
		node = m
	}
	return node, nil
}

func dig(m map[string]interface{}, keys ...string) interface{} {
	var cur interface{} = m
	for _, k := range keys {
		mm, ok := cur.(map[string]interface{})
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}
