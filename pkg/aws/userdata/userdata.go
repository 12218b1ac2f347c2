// Package userdata writes the EC2 user data that joins an instance to the cluster, one format per
// AMI family (AL2023 nodeadm NodeConfig, Bottlerocket TOML, AL2 bootstrap.sh, Windows PowerShell),
// and reads it back.
//
// Reading it back is what a booting node does: the emulator uses Parse to play nodeadm, the
// Bottlerocket API or bootstrap.sh, so the node it registers carries exactly the labels, taints and
// kubelet reservations the provider asked for. That keeps the provider honest: anything it forgets
// to put in the user data is missing from the node, as it would be on EC2.
package userdata

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
)

// Node is what a node's bootstrap needs: how to reach the cluster and how the kubelet registers.
type Node struct {
	ClusterName       string
	APIServerEndpoint string
	// CABundle is the cluster CA, base64-encoded PEM as EKS hands it out.
	CABundle    string
	ServiceCIDR string
	ClusterDNS  []string
	// Labels and Taints are what the kubelet registers the node with.
	Labels map[string]string
	Taints []corev1.Taint
	// MaxPods is baked in because it depends on the instance type's ENI limits; 0 leaves the
	// kubelet's default.
	MaxPods        int32
	KubeReserved   map[string]string
	SystemReserved map[string]string
	EvictionHard   map[string]string
	// InstanceStoreRAID0 stripes the instance-store NVMe disks into one array and puts the
	// kubelet's and the container runtime's data on it (the node class's instanceStorePolicy).
	InstanceStoreRAID0 bool
}

// Render returns the user data for family (an awsv1.AMIFamily* value), merged with the node
// class's own userData in the way the family allows. Custom returns custom untouched: the image
// bootstraps itself.
//
// Settings of the user's that the family merges into the node's own (Bottlerocket's, an AL2023
// NodeConfig's kubelet flags) are refused, naming spec.userData, when the kubelet would refuse
// to start with them (see check): the class says so before any launch.
func Render(family string, n Node, custom string) (string, error) {
	var render func(Node, string) (string, error)
	switch family {
	case awsv1.AMIFamilyAL2023:
		render = renderAL2023
	case awsv1.AMIFamilyBottlerocket:
		render = renderBottlerocket
	case awsv1.AMIFamilyAL2:
		render = renderAL2
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		render = renderWindows
	case awsv1.AMIFamilyCustom:
		return custom, nil
	default:
		return "", fmt.Errorf("AMI family %q has no user data format in Tailor; use AL2023, Bottlerocket, AL2, Windows2019, Windows2022, Windows2025 or Custom", family)
	}
	out, err := render(n, custom)
	if err != nil || strings.TrimSpace(custom) == "" {
		return out, err
	}
	// Blamed on spec.userData only when Tailor's own node passes: a NodePool label or taint the
	// kubelet refuses is not the user data's fault.
	if n.check() == nil {
		if _, err := Parse(out); errors.Is(err, errRefused) {
			return "", fmt.Errorf("spec.userData: %w", err)
		}
	}
	return out, nil
}

// Validate reports what in a node class's userData Render could not merge for family, so that a
// node class says so before any launch. It checks the families Render knows; for others, "no
// format" is the AMI family's problem, reported where the family is resolved.
func Validate(family, custom string) error {
	switch family {
	case awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyAL2,
		awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		if strings.TrimSpace(custom) == "" {
			return nil
		}
		_, err := Render(family, Node{}, custom)
		return err
	}
	return nil
}

// Parse reads user data the way the node's bootstrap would and returns what it registers with.
// It recognises the four formats Render writes, including merged custom parts.
// A node its kubelet would refuse to start as (see check) is an error.
func Parse(data string) (Node, error) {
	trimmed := strings.TrimSpace(data)
	var (
		n   Node
		err error
	)
	switch {
	case strings.HasPrefix(trimmed, "MIME-Version"), strings.HasPrefix(trimmed, "Content-Type"):
		n, err = parseMIME(trimmed)
	case strings.HasPrefix(trimmed, "<powershell>"):
		n, err = parseWindows(trimmed)
	case strings.HasPrefix(trimmed, "[") || strings.Contains(trimmed, "[settings"):
		n, err = parseBottlerocket(trimmed)
	default:
		return Node{}, fmt.Errorf("user data is neither MIME multi-part (AL2023, AL2), Bottlerocket TOML nor PowerShell (Windows)")
	}
	if err != nil {
		return Node{}, err
	}
	if err := n.check(); err != nil {
		return Node{}, err
	}
	return n, nil
}

// UnregisteredTaint is what every node registers with until Tailor has synced its NodeClaim onto
// it; it is added here so no family can forget it.
var UnregisteredTaint = corev1.Taint{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}

// taintsWithUnregistered returns n.Taints plus the unregistered taint, once.
func (n Node) taintsWithUnregistered() []corev1.Taint {
	out := append([]corev1.Taint(nil), n.Taints...)
	for _, t := range out {
		if t.Key == UnregisteredTaint.Key && t.Effect == UnregisteredTaint.Effect {
			return out
		}
	}
	return append(out, UnregisteredTaint)
}

// labelFlag is the kubelet's --node-labels value, sorted so the same node renders the same bytes
// (the launch template name is a hash of them).
func labelFlag(labels map[string]string) string {
	parts := make([]string, 0, len(labels))
	for k, v := range labels {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func taintFlag(taints []corev1.Taint) string {
	parts := make([]string, 0, len(taints))
	for _, t := range taints {
		parts = append(parts, formatTaint(t))
	}
	return strings.Join(parts, ",")
}

func formatTaint(t corev1.Taint) string {
	if t.Value == "" {
		return fmt.Sprintf("%s:%s", t.Key, t.Effect)
	}
	return fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
}

func parseLabelFlag(s string) map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(part, "="); ok && k != "" {
			out[k] = v
		}
	}
	return out
}

func parseTaintFlag(s string) ([]corev1.Taint, error) {
	var out []corev1.Taint
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		t, err := parseTaint(part)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func parseTaint(s string) (corev1.Taint, error) {
	kv, effect, ok := strings.Cut(s, ":")
	if !ok {
		return corev1.Taint{}, fmt.Errorf("taint %q has no effect", s)
	}
	key, value, _ := strings.Cut(kv, "=")
	return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)}, nil
}

// mapFlag formats kube-reserved style maps: cpu=100m,memory=1Gi, sorted.
func mapFlag(m map[string]string, sep string) string {
	parts := make([]string, 0, len(m))
	for k, v := range m {
		parts = append(parts, k+sep+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func parseMapFlag(s, sep string) map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(part, sep); ok {
			out[k] = v
		}
	}
	return out
}
