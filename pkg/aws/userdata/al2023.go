package userdata

import (
	"fmt"
	"mime"
	"strings"

	"sigs.k8s.io/yaml"
)

// MIME content types nodeadm and cloud-init act on.
const (
	contentTypeNodeConfig = "application/node.eks.aws"
	contentTypeShell      = "text/x-shellscript"
)

// nodeConfig is the subset of nodeadm's node.eks.aws/v1alpha1 NodeConfig that Tailor writes.
type nodeConfig struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Spec       nodeConfigSpec `json:"spec"`
}

type nodeConfigSpec struct {
	Cluster  *nodeConfigCluster  `json:"cluster,omitempty"`
	Instance *nodeConfigInstance `json:"instance,omitempty"`
	Kubelet  *nodeConfigKubelet  `json:"kubelet,omitempty"`
}

// nodeConfigInstance is how nodeadm sets up the host; Tailor only asks for the local-disk array.
type nodeConfigInstance struct {
	LocalStorage struct {
		Strategy string `json:"strategy,omitempty"`
	} `json:"localStorage"`
}

// localStorageRAID0 is nodeadm's strategy that stripes the instance-store disks and mounts the
// kubelet's and containerd's directories on the array.
const localStorageRAID0 = "RAID0"

type nodeConfigCluster struct {
	Name                 string `json:"name,omitempty"`
	APIServerEndpoint    string `json:"apiServerEndpoint,omitempty"`
	CertificateAuthority string `json:"certificateAuthority,omitempty"`
	CIDR                 string `json:"cidr,omitempty"`
}

type nodeConfigKubelet struct {
	Config kubeletConfig `json:"config,omitempty"`
	Flags  []string      `json:"flags,omitempty"`
}

type kubeletConfig struct {
	MaxPods        int32             `json:"maxPods,omitempty"`
	ClusterDNS     []string          `json:"clusterDNS,omitempty"`
	KubeReserved   map[string]string `json:"kubeReserved,omitempty"`
	SystemReserved map[string]string `json:"systemReserved,omitempty"`
	EvictionHard   map[string]string `json:"evictionHard,omitempty"`
}

// renderAL2023 writes a MIME multi-part document: Tailor's NodeConfig first, then the node
// class's own parts. nodeadm merges NodeConfigs in order, so a user's NodeConfig can refine kubelet
// settings; labels and taints travel as kubelet flags so registration never depends on it.
func renderAL2023(n Node, custom string) (string, error) {
	cfg := nodeConfig{
		APIVersion: "node.eks.aws/v1alpha1",
		Kind:       "NodeConfig",
		Spec: nodeConfigSpec{
			Cluster: &nodeConfigCluster{Name: n.ClusterName, APIServerEndpoint: n.APIServerEndpoint,
				CertificateAuthority: n.CABundle, CIDR: n.ServiceCIDR},
			Kubelet: &nodeConfigKubelet{
				Config: kubeletConfig{MaxPods: n.MaxPods, ClusterDNS: n.ClusterDNS, KubeReserved: n.KubeReserved,
					SystemReserved: n.SystemReserved, EvictionHard: n.EvictionHard},
				Flags: []string{"--node-labels=" + labelFlag(n.Labels), "--register-with-taints=" + taintFlag(n.taintsWithUnregistered())},
			},
		},
	}
	if n.InstanceStoreRAID0 {
		cfg.Spec.Instance = &nodeConfigInstance{}
		cfg.Spec.Instance.LocalStorage.Strategy = localStorageRAID0
	}
	doc, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	parts := []mimePart{{contentType: contentTypeNodeConfig, body: string(doc)}}
	customParts, err := customMIMEParts(custom, true)
	if err != nil {
		return "", fmt.Errorf("spec.userData: %w", err)
	}
	return writeMIME(append(parts, customParts...))
}

// parseMIME plays nodeadm (NodeConfig parts, merged in order) and bootstrap.sh (shell parts).
func parseMIME(doc string) (Node, error) {
	parts, err := readMIME(doc)
	if err != nil {
		return Node{}, err
	}
	var n Node
	found := false
	for _, p := range parts {
		ct, _, _ := mime.ParseMediaType(p.contentType)
		switch {
		case ct == contentTypeNodeConfig:
			var cfg nodeConfig
			if err := yaml.Unmarshal([]byte(p.body), &cfg); err != nil {
				return Node{}, fmt.Errorf("NodeConfig part: %w", err)
			}
			if err := mergeNodeConfig(&n, cfg); err != nil {
				return Node{}, err
			}
			found = true
		case ct == contentTypeShell && strings.Contains(p.body, bootstrapScript):
			if err := parseAL2Script(&n, p.body); err != nil {
				return Node{}, err
			}
			found = true
		}
	}
	if !found {
		return Node{}, fmt.Errorf("user data has neither a NodeConfig nor a bootstrap.sh call: the node would never join")
	}
	return n, nil
}

// mergeNodeConfig applies one NodeConfig over n: set fields win, maps merge, as nodeadm does.
func mergeNodeConfig(n *Node, cfg nodeConfig) error {
	if c := cfg.Spec.Cluster; c != nil {
		n.ClusterName = firstNonEmpty(c.Name, n.ClusterName)
		n.APIServerEndpoint = firstNonEmpty(c.APIServerEndpoint, n.APIServerEndpoint)
		n.CABundle = firstNonEmpty(c.CertificateAuthority, n.CABundle)
		n.ServiceCIDR = firstNonEmpty(c.CIDR, n.ServiceCIDR)
	}
	if i := cfg.Spec.Instance; i != nil && i.LocalStorage.Strategy != "" {
		n.InstanceStoreRAID0 = i.LocalStorage.Strategy == localStorageRAID0
	}
	k := cfg.Spec.Kubelet
	if k == nil {
		return nil
	}
	if k.Config.MaxPods != 0 {
		n.MaxPods = k.Config.MaxPods
	}
	if len(k.Config.ClusterDNS) > 0 {
		n.ClusterDNS = k.Config.ClusterDNS
	}
	n.KubeReserved = mergeMaps(n.KubeReserved, k.Config.KubeReserved)
	n.SystemReserved = mergeMaps(n.SystemReserved, k.Config.SystemReserved)
	n.EvictionHard = mergeMaps(n.EvictionHard, k.Config.EvictionHard)
	return applyKubeletFlags(n, k.Flags)
}

// applyKubeletFlags reads the kubelet flags that shape registration.
func applyKubeletFlags(n *Node, flags []string) error {
	for _, f := range flags {
		name, value, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		value = strings.Trim(value, `"'`)
		switch name {
		case "node-labels":
			n.Labels = mergeMaps(n.Labels, parseLabelFlag(value))
		case "register-with-taints":
			taints, err := parseTaintFlag(value)
			if err != nil {
				return fmt.Errorf("--register-with-taints: %w", err)
			}
			n.Taints = append(n.Taints, taints...)
		case "max-pods":
			var pods int32
			if _, err := fmt.Sscan(value, &pods); err != nil {
				return fmt.Errorf("--max-pods=%q: %w", value, err)
			}
			n.MaxPods = pods
		case "kube-reserved":
			n.KubeReserved = mergeMaps(n.KubeReserved, parseMapFlag(value, "="))
		case "system-reserved":
			n.SystemReserved = mergeMaps(n.SystemReserved, parseMapFlag(value, "="))
		case "eviction-hard":
			n.EvictionHard = mergeMaps(n.EvictionHard, parseMapFlag(value, "<"))
		}
	}
	return nil
}

func mergeMaps(base, over map[string]string) map[string]string {
	if len(over) == 0 {
		return base
	}
	out := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
