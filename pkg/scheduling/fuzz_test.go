package scheduling

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// crdBound is the CRD's rule for the value of Gt, Lt, Gte and Lte
// (pkg/apis/karpenter/v1/nodeclaim.go): what the API server admits, the selector must honour.
var crdBound = regexp.MustCompile(`^[0-9]{1,18}$`)

var fuzzOperators = []corev1.NodeSelectorOperator{corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn,
	corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt,
	karpv1.NodeSelectorOpGte, karpv1.NodeSelectorOpLte}

// FuzzRequirement reads one NodePool requirement (key, operator, values joined by ",") and a
// node's value for the key. Properties: no panic; a requirement that does not build is an error
// that names its key; one that builds means what its operator says: In matches its values, NotIn
// refuses them, Exists and DoesNotExist look at the key only, and the bounds Gt, Lt, Gte and Lte
// (Karpenter's inclusive ones included) compare integers exactly, for every value the CRD admits.
func FuzzRequirement(f *testing.F) {
	for _, s := range []struct {
		key    string
		op     uint8
		values string
		label  string
	}{
		{"karpenter.k8s.aws/instance-category", 0, "c,m,r", "m"}, {"karpenter.sh/capacity-type", 1, "spot", "on-demand"},
		{"karpenter.k8s.aws/instance-generation", 6, "5", "5"}, {"karpenter.k8s.aws/instance-cpu", 7, "16", "17"},
		{"karpenter.k8s.aws/instance-memory", 4, "2047", "2048"}, {"topology.kubernetes.io/zone", 2, "", "us-west-2a"},
		{"example.com/team", 3, "", ""}, {"bad key!", 0, "x", "x"}, {"kubernetes.io/arch", 5, "amd64", "arm64"},
		{"karpenter.k8s.aws/instance-cpu", 6, "999999999999999999", "999999999999999999"},
	} {
		f.Add(s.key, s.op, s.values, s.label)
	}
	f.Fuzz(func(t *testing.T, key string, pick uint8, joined, label string) {
		op := fuzzOperators[int(pick)%len(fuzzOperators)]
		var values []string
		if joined != "" {
			values = strings.Split(joined, ",")
		}
		reqs := NodeSelectorRequirements([]karpv1.NodeSelectorRequirementWithMinValues{{Key: key, Operator: op, Values: values}})
		sel, err := NewSelector(reqs)
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(key)) {
				t.Fatalf("error does not name the key %q: %v", key, err)
			}
			return
		}
		with := map[string]string{key: label}
		without := map[string]string{"example.com/other": label}
		if key == "example.com/other" {
			without = map[string]string{}
		}
		got, gotWithout := sel.Matches(with), sel.Matches(without)
		switch op {
		case corev1.NodeSelectorOpIn:
			if got != contains(values, label) || gotWithout {
				t.Fatalf("%s In %v on %q: %v, on no label: %v", key, values, label, got, gotWithout)
			}
		case corev1.NodeSelectorOpNotIn:
			if got == contains(values, label) || !gotWithout {
				t.Fatalf("%s NotIn %v on %q: %v, on no label: %v", key, values, label, got, gotWithout)
			}
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			if got != (op == corev1.NodeSelectorOpExists) || gotWithout == got {
				t.Fatalf("%s %s: on %q %v, on no label %v", key, op, label, got, gotWithout)
			}
		default:
			if len(values) != 1 || !crdBound.MatchString(values[0]) {
				return // the API server refuses it; it must only not panic
			}
			bound, _ := strconv.ParseInt(values[0], 10, 64)
			x, err := strconv.ParseInt(label, 10, 64)
			want := err == nil && map[corev1.NodeSelectorOperator]bool{
				corev1.NodeSelectorOpGt: x > bound, corev1.NodeSelectorOpLt: x < bound,
				karpv1.NodeSelectorOpGte: x >= bound, karpv1.NodeSelectorOpLte: x <= bound}[op]
			if got != want || gotWithout {
				t.Fatalf("%s %s %d on %q: %v, want %v (on no label: %v)", key, op, bound, label, got, want, gotWithout)
			}
		}
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
