package apis_test

import (
	"fmt"
	"strings"
	"testing"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

const minimalNodePool = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
`

func TestNodePoolDefaults(t *testing.T) {
	obj := fromYAML(t, minimalNodePool)
	if errs := admitters(t)["NodePool"].admit(obj, nil); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	var np karpv1.NodePool
	decodeStrict(t, mustYAML(t, obj), &np)
	d := np.Spec.Disruption
	if d.ConsolidateAfter.String() != "0s" || d.ConsolidationPolicy != karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized {
		t.Errorf("disruption defaults: %+v", d)
	}
	if len(d.Budgets) != 1 || d.Budgets[0].Nodes != "10%" {
		t.Errorf("budget defaults: %+v", d.Budgets)
	}
	if np.Spec.Template.Spec.ExpireAfter.String() != "720h0m0s" {
		t.Errorf("expireAfter default: %v", np.Spec.Template.Spec.ExpireAfter)
	}
}

func TestNodePoolValidation(t *testing.T) {
	np := admitters(t)["NodePool"]
	base := fromYAML(t, minimalNodePool)
	requirement := func(r string) string {
		return "spec: {template: {spec: {requirements: [" + r + "]}}}"
	}
	for _, tc := range []struct {
		name, patch, field, fragment string // empty field: must be admitted
	}{
		{name: "plain requirement", patch: requirement(`{key: example.com/team, operator: In, values: [a]}`)},
		{name: "Gt integer", patch: requirement(`{key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["5"]}`)},
		{name: "Gte integer", patch: requirement(`{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["4"]}`)},
		{name: "Gt non-integer", patch: requirement(`{key: karpenter.k8s.aws/instance-generation, operator: Gt, values: [abc]}`),
			field: "spec.template.spec.requirements[0].values", fragment: "single positive integer"},
		{name: "Lt negative", patch: requirement(`{key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: ["-1"]}`),
			field: "spec.template.spec.requirements[0].values", fragment: "single positive integer"},
		{name: "Gt two values", patch: requirement(`{key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["5", "6"]}`),
			field: "spec.template.spec.requirements[0].values", fragment: "single positive integer"},
		{name: "Lte no value", patch: requirement(`{key: karpenter.k8s.aws/instance-cpu, operator: Lte}`),
			field: "spec.template.spec.requirements[0].values", fragment: "single positive integer"},
		{name: "In without values", patch: requirement(`{key: example.com/team, operator: In}`),
			field: "spec.template.spec.requirements[0].values", fragment: "must have a value defined"},
		{name: "unknown operator", patch: requirement(`{key: example.com/team, operator: Near, values: [a]}`),
			field: "spec.template.spec.requirements[0].operator", fragment: "Unsupported value"},
		{name: "capacity type outside spot/on-demand/reserved", patch: requirement(`{key: karpenter.sh/capacity-type, operator: In, values: [spot, cheap]}`),
			field: "spec.template.spec.requirements[0].values", fragment: "'spot', 'on-demand' or 'reserved'"},
		{name: "capacity type reserved", patch: requirement(`{key: karpenter.sh/capacity-type, operator: In, values: [reserved]}`)},
		{name: "hostname requirement", patch: requirement(`{key: kubernetes.io/hostname, operator: In, values: [a]}`),
			field: "spec.template.spec.requirements[0].key", fragment: `label "kubernetes.io/hostname" is restricted`},
		{name: "nodepool requirement", patch: requirement(`{key: karpenter.sh/nodepool, operator: In, values: [a]}`),
			field: "spec.template.spec.requirements", fragment: `label "karpenter.sh/nodepool" is restricted`},
		{name: "karpenter.sh requirement", patch: requirement(`{key: karpenter.sh/custom, operator: Exists}`),
			field: "spec.template.spec.requirements[0].key", fragment: `label domain "karpenter.sh" is restricted`},
		{name: "k8s.io requirement", patch: requirement(`{key: k8s.io/custom, operator: Exists}`),
			field: "spec.template.spec.requirements[0].key", fragment: `label domain "k8s.io" is restricted`},
		{name: "kubernetes.io requirement", patch: requirement(`{key: kubernetes.io/custom, operator: Exists}`),
			field: "spec.template.spec.requirements[0].key", fragment: `label domain "kubernetes.io" is restricted`},
		{name: "node.kubernetes.io exception", patch: requirement(`{key: node.kubernetes.io/role, operator: Exists}`)},
		{name: "aws custom requirement", patch: requirement(`{key: karpenter.k8s.aws/custom, operator: Exists}`),
			field: "spec.template.spec.requirements[0].key", fragment: `label domain "karpenter.k8s.aws" is restricted`},
		{name: "key not a qualified name", patch: requirement(`{key: "a b", operator: Exists}`),
			field: "spec.template.spec.requirements[0].key", fragment: "should match"},
		{name: "value not a label value", patch: requirement(`{key: example.com/team, operator: In, values: ["a b"]}`),
			field: "spec.template.spec.requirements[0].values[0]", fragment: "should match"},
		{name: "minValues 0", patch: requirement(`{key: node.kubernetes.io/instance-type, operator: Exists, minValues: 0}`),
			field: "spec.template.spec.requirements[0].minValues", fragment: "greater than or equal to 1"},
		{name: "minValues 51", patch: requirement(`{key: node.kubernetes.io/instance-type, operator: Exists, minValues: 51}`),
			field: "spec.template.spec.requirements[0].minValues", fragment: "less than or equal to 50"},
		{name: "minValues above values", patch: requirement(`{key: node.kubernetes.io/instance-type, operator: In, values: [a, b], minValues: 3}`),
			field: "spec.template.spec.requirements[0].minValues", fragment: "at least that many values"},
		{name: "minValues within values", patch: requirement(`{key: node.kubernetes.io/instance-type, operator: In, values: [a, b], minValues: 2}`)},
		{name: "too many requirements", patch: requirement(strings.TrimSuffix(strings.Repeat(`{key: example.com/x, operator: Exists},`, 101), ",")),
			field: "spec.template.spec.requirements", fragment: "Too many"},
		{name: "weight 0", patch: `spec: {weight: 0}`, field: "spec.weight", fragment: "greater than or equal to 1"},
		{name: "weight 101", patch: `spec: {weight: 101}`, field: "spec.weight", fragment: "less than or equal to 100"},
		{name: "weight 100", patch: `spec: {weight: 100}`},
		{name: "budget 110%", patch: `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "110%"}]}}`,
			field: "spec.disruption.budgets[0].nodes", fragment: "should match"},
		{name: "budget count", patch: `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "3"}]}}`},
		{name: "budget schedule without duration", patch: `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "0", schedule: "@daily"}]}}`,
			field: "spec.disruption.budgets", fragment: "'schedule' must be set with 'duration'"},
		{name: "budget duration in seconds", patch: `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "0", schedule: "@daily", duration: 30s}]}}`,
			field: "spec.disruption.budgets[0].duration", fragment: "should match"},
		{name: "budget unknown reason", patch: `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "1", reasons: [Expired]}]}}`,
			field: "spec.disruption.budgets[0].reasons[0]", fragment: "Unsupported value"},
		{name: "consolidateAfter abc", patch: `spec: {disruption: {consolidateAfter: abc}}`,
			field: "spec.disruption.consolidateAfter", fragment: "should match"},
		{name: "consolidateAfter Never", patch: `spec: {disruption: {consolidateAfter: Never}}`},
		{name: "consolidateAfter missing", patch: `spec: {disruption: {consolidationPolicy: WhenEmpty}}`,
			field: "spec.disruption.consolidateAfter", fragment: "Required value"},
		{name: "policy unknown", patch: `spec: {disruption: {consolidateAfter: 0s, consolidationPolicy: WhenUnderutilized}}`,
			field: "spec.disruption.consolidationPolicy", fragment: "Unsupported value"},
		{name: "expireAfter days", patch: `spec: {template: {spec: {expireAfter: 30d}}}`,
			field: "spec.template.spec.expireAfter", fragment: "should match"},
		{name: "terminationGracePeriod Never", patch: `spec: {template: {spec: {terminationGracePeriod: Never}}}`,
			field: "spec.template.spec.terminationGracePeriod", fragment: "should match"},
		{name: "hostname label", patch: `spec: {template: {metadata: {labels: {kubernetes.io/hostname: a}}}}`,
			field: "spec.template.metadata.labels", fragment: `label "kubernetes.io/hostname" is restricted`},
		{name: "nodepool label", patch: `spec: {template: {metadata: {labels: {karpenter.sh/nodepool: a}}}}`,
			field: "spec.template.metadata.labels", fragment: `label "karpenter.sh/nodepool" is restricted`},
		{name: "aws custom label", patch: `spec: {template: {metadata: {labels: {karpenter.k8s.aws/custom: a}}}}`,
			field: "spec.template.metadata.labels", fragment: `label domain "karpenter.k8s.aws" is restricted`},
		{name: "bad label value", patch: `spec: {template: {metadata: {labels: {example.com/team: "a b"}}}}`,
			field: "spec.template.metadata.labels", fragment: "should match"},
		{name: "custom label", patch: `spec: {template: {metadata: {labels: {example.com/team: a, node.kubernetes.io/role: b}}}}`},
		// Template labels are requirements too: one the requirements on its key refuse is refused.
		{name: "zone label outside the zone requirement", patch: labelled(`topology.kubernetes.io/zone: us-west-2b`, `{key: topology.kubernetes.io/zone, operator: In, values: [us-west-2a]}`),
			field: "spec.template.metadata.labels", fragment: "must satisfy every requirement on its key in spec.template.spec.requirements"},
		{name: "zone label within the zone requirement", patch: labelled(`topology.kubernetes.io/zone: us-west-2b`, `{key: topology.kubernetes.io/zone, operator: In, values: [us-west-2a, us-west-2b]}`)},
		{name: "custom label NotIn", patch: labelled(`example.com/team: a`, `{key: example.com/team, operator: NotIn, values: [a]}`),
			field: "spec.template.metadata.labels", fragment: "spec.template.spec.requirements"},
		{name: "custom label DoesNotExist", patch: labelled(`example.com/team: a`, `{key: example.com/team, operator: DoesNotExist}`),
			field: "spec.template.metadata.labels", fragment: "spec.template.spec.requirements"},
		{name: "custom label Exists", patch: labelled(`example.com/team: a`, `{key: example.com/team, operator: Exists}`)},
		{name: "label below Gt", patch: labelled(`karpenter.k8s.aws/instance-generation: "5"`, `{key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["5"]}`),
			field: "spec.template.metadata.labels", fragment: "spec.template.spec.requirements"},
		{name: "label within Gte", patch: labelled(`karpenter.k8s.aws/instance-generation: "5"`, `{key: karpenter.k8s.aws/instance-generation, operator: Gte, values: ["5"]}`)},
		{name: "label not a number under Lt", patch: labelled(`karpenter.k8s.aws/instance-cpu: many`, `{key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: ["8"]}`),
			field: "spec.template.metadata.labels", fragment: "spec.template.spec.requirements"},
		{name: "label on a key no requirement names", patch: labelled(`example.com/team: a`, `{key: karpenter.sh/capacity-type, operator: In, values: [spot]}`)},
		{name: "taint with unknown effect", patch: `spec: {template: {spec: {taints: [{key: example.com/gpu, effect: NoPlease}]}}}`,
			field: "spec.template.spec.taints[0].effect", fragment: "Unsupported value"},
		{name: "startup taint with bad key", patch: `spec: {template: {spec: {startupTaints: [{key: "-bad", effect: NoSchedule}]}}}`,
			field: "spec.template.spec.startupTaints[0].key", fragment: "should match"},
		{name: "taint with bad value", patch: `spec: {template: {spec: {taints: [{key: example.com/gpu, value: "a b", effect: NoSchedule}]}}}`,
			field: "spec.template.spec.taints[0].value", fragment: "should match"},
		{name: "taints", patch: `spec: {template: {spec: {taints: [{key: example.com/gpu, value: "true", effect: NoSchedule}]}}}`},
		{name: "nodeClassRef without group", patch: `spec: {template: {spec: {nodeClassRef: {group: null}}}}`,
			field: "spec.template.spec.nodeClassRef.group", fragment: "Required value"},
		{name: "limits", patch: `spec: {limits: {cpu: "1000", memory: 1000Gi, nvidia.com/gpu: 8}}`},
		{name: "limits not a quantity", patch: `spec: {limits: {cpu: lots}}`, field: "spec.limits.cpu", fragment: "should match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := np.admit(withPatch(t, base, tc.patch), nil)
			if tc.field == "" {
				if len(errs) > 0 {
					t.Fatalf("refused: %v", errs.ToAggregate())
				}
				return
			}
			expectRefused(t, errs, tc.field, tc.fragment)
		})
	}
}

// labelled is a patch that sets one template label and one requirement.
func labelled(label, requirement string) string {
	return "spec: {template: {metadata: {labels: {" + label + "}}, spec: {requirements: [" + requirement + "]}}}"
}

func TestNodePoolNodeClassRefImmutableKind(t *testing.T) {
	np := admitters(t)["NodePool"]
	old := fromYAML(t, minimalNodePool)
	if errs := np.admit(old, nil); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	renamed := withPatch(t, old, `spec: {template: {spec: {nodeClassRef: {name: other}}}}`)
	if errs := np.admit(renamed, old); len(errs) > 0 {
		t.Fatalf("renaming the node class must be allowed: %v", errs.ToAggregate())
	}
	rekinded := withPatch(t, old, `spec: {template: {spec: {nodeClassRef: {kind: OtherNodeClass}}}}`)
	expectRefused(t, np.admit(rekinded, old), "spec.template.spec.nodeClassRef", "nodeClassRef.kind is immutable")
}

// The CRD's list of allowed karpenter.k8s.aws labels is written out in a CEL rule; this keeps it
// in step with awsv1.WellKnownLabels and with IsRestrictedLabel.
func TestRequirementKeysAgreeWithIsRestrictedLabel(t *testing.T) {
	np := admitters(t)["NodeClaim"]
	base := fromYAML(t, minimalNodeClaim)
	keys := append(awsv1.WellKnownLabels.UnsortedList(), karpv1.WellKnownLabels.UnsortedList()...)
	keys = append(keys, "karpenter.k8s.aws/custom", "karpenter.k8s.aws/ec2nodeclass", "karpenter.sh/registered",
		"kubernetes.io/hostname", "beta.kubernetes.io/arch", "node.kubernetes.io/role", "k8s.io/x", "kops.k8s.io/x",
		"example.com/team", "team")
	for _, key := range keys {
		patch := fmt.Sprintf("spec: {requirements: [{key: %q, operator: Exists}]}", key)
		admitted := len(np.admit(withPatch(t, base, patch), nil)) == 0
		if restricted := karpv1.IsRestrictedLabel(key) != nil; admitted == restricted {
			t.Errorf("%s: admitted by the CRD=%v but IsRestrictedLabel says restricted=%v", key, admitted, restricted)
		}
	}
}
