package userdata

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// renderBottlerocket merges Tailor's settings into the node class's TOML. Bottlerocket has one
// settings document, so the cluster, labels, taints and reservations Tailor sets win over the
// user's; everything else the user wrote is kept.
func renderBottlerocket(n Node, custom string) (string, error) {
	doc, err := parseTOML(custom)
	if err != nil {
		return "", fmt.Errorf("spec.userData is not valid Bottlerocket TOML: %w", err)
	}
	k8s := table(doc, "settings", "kubernetes")
	k8s["cluster-name"] = n.ClusterName
	k8s["api-server"] = n.APIServerEndpoint
	k8s["cluster-certificate"] = n.CABundle
	if len(n.ClusterDNS) > 0 {
		k8s["cluster-dns-ip"] = n.ClusterDNS[0]
	}
	if n.MaxPods > 0 {
		k8s["max-pods"] = int64(n.MaxPods)
	}
	setStrings(table(k8s, "node-labels"), n.Labels)
	taints := table(k8s, "node-taints")
	for _, t := range n.taintsWithUnregistered() {
		entry := t.Value + ":" + string(t.Effect)
		list, _ := taints[t.Key].([]any)
		taints[t.Key] = append(list, entry)
	}
	if n.InstanceStoreRAID0 {
		// Bottlerocket's API sets up ephemeral storage: init builds the array from the
		// instance-store disks, bind mounts the kubelet's, containerd's and the pod logs'
		// directories on it, before the kubelet starts.
		cmd := table(doc, "settings", "bootstrap-commands", raid0Command)
		cmd["commands"] = []any{
			[]any{"apiclient", "ephemeral-storage", "init"},
			[]any{"apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"},
		}
		cmd["mode"] = "always"
		cmd["essential"] = true
	}
	setStrings(table(k8s, "kube-reserved"), n.KubeReserved)
	setStrings(table(k8s, "system-reserved"), n.SystemReserved)
	setStrings(table(k8s, "eviction-hard"), n.EvictionHard)
	return writeTOML(doc), nil
}

// parseBottlerocket reads the settings the Bottlerocket API server would apply.
func parseBottlerocket(data string) (Node, error) {
	doc, err := parseTOML(data)
	if err != nil {
		return Node{}, err
	}
	settings, _ := doc["settings"].(map[string]any)
	k8s, _ := settings["kubernetes"].(map[string]any)
	if k8s == nil {
		return Node{}, fmt.Errorf("bottlerocket user data has no [settings.kubernetes]: the node would never join")
	}
	n := Node{
		ClusterName:       str(k8s["cluster-name"]),
		APIServerEndpoint: str(k8s["api-server"]),
		CABundle:          str(k8s["cluster-certificate"]),
		Labels:            stringMap(k8s["node-labels"]),
		KubeReserved:      stringMap(k8s["kube-reserved"]),
		SystemReserved:    stringMap(k8s["system-reserved"]),
		EvictionHard:      stringMap(k8s["eviction-hard"]),
	}
	n.InstanceStoreRAID0 = bindsEphemeralStorage(settings)
	if dns := str(k8s["cluster-dns-ip"]); dns != "" {
		n.ClusterDNS = []string{dns}
	}
	if pods, ok := k8s["max-pods"].(int64); ok {
		n.MaxPods = int32(pods)
	}
	taints, _ := k8s["node-taints"].(map[string]any)
	keys := make([]string, 0, len(taints))
	for k := range taints {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		values, ok := taints[key].([]any)
		if !ok {
			values = []any{taints[key]}
		}
		for _, v := range values {
			t, err := parseTaint(key + "=" + str(v))
			if err != nil {
				return Node{}, fmt.Errorf("node-taints %q: %w", key, err)
			}
			if t.Value == "" {
				t = corev1.Taint{Key: key, Effect: t.Effect}
			}
			n.Taints = append(n.Taints, t)
		}
	}
	return n, nil
}

// raid0Command names the bootstrap command that sets up the instance-store array.
const raid0Command = "000-mount-instance-storage"

// bindsEphemeralStorage is whether a bootstrap command initialises ephemeral storage and binds
// the kubelet's directory to it, as Bottlerocket would run it.
func bindsEphemeralStorage(settings map[string]any) bool {
	cmds, _ := settings["bootstrap-commands"].(map[string]any)
	for _, c := range cmds {
		entry, _ := c.(map[string]any)
		list, _ := entry["commands"].([]any)
		initialised, bound := false, false
		for _, argv := range list {
			words := fmt.Sprint(argv)
			initialised = initialised || strings.Contains(words, "ephemeral-storage init")
			bound = bound || (strings.Contains(words, "ephemeral-storage bind") && strings.Contains(words, "/var/lib/kubelet"))
		}
		if initialised && bound {
			return true
		}
	}
	return false
}

// table returns the sub-table at path, creating it.
func table(root map[string]any, path ...string) map[string]any {
	t := root
	for _, p := range path {
		next, ok := t[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			t[p] = next
		}
		t = next
	}
	return t
}

func setStrings(t map[string]any, m map[string]string) {
	for k, v := range m {
		t[k] = v
	}
}

func str(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	default:
		return ""
	}
}

func stringMap(v any) map[string]string {
	t, ok := v.(map[string]any)
	if !ok || len(t) == 0 {
		return nil
	}
	out := make(map[string]string, len(t))
	for k, v := range t {
		out[k] = str(v)
	}
	return out
}
