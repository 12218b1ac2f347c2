package userdata

import (
	"fmt"
	"strings"
)

const bootstrapScript = "/etc/eks/bootstrap.sh"

// renderAL2 writes a MIME document whose last part calls the EKS AL2 bootstrap script. The node
// class's parts come first because AL2 users customise the host before the kubelet starts.
func renderAL2(n Node, custom string) (string, error) {
	var b strings.Builder
	b.WriteString("#!/bin/bash -xe\n")
	b.WriteString("exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n")
	fmt.Fprintf(&b, "%s '%s' --apiserver-endpoint '%s' --b64-cluster-ca '%s'", bootstrapScript, n.ClusterName, n.APIServerEndpoint, n.CABundle)
	if len(n.ClusterDNS) > 0 {
		fmt.Fprintf(&b, " \\\n--dns-cluster-ip '%s'", n.ClusterDNS[0])
	}
	// bootstrap.sh would otherwise compute max pods itself, from a table Tailor cannot see.
	b.WriteString(" \\\n--use-max-pods false")
	if n.InstanceStoreRAID0 {
		// bootstrap.sh builds /dev/md/kubernetes from the instance-store NVMe disks and mounts
		// the kubelet's and containerd's directories on it.
		b.WriteString(" \\\n--local-disks raid0")
	}
	flags := kubeletFlags(n)
	fmt.Fprintf(&b, " \\\n--kubelet-extra-args '%s'\n", strings.Join(flags, " "))

	parts, err := customMIMEParts(custom, false)
	if err != nil {
		return "", fmt.Errorf("spec.userData: %w", err)
	}
	return writeMIME(append(parts, mimePart{contentType: contentTypeShell, body: b.String()}))
}

// parseAL2Script reads the bootstrap.sh call the way the script's argument parser does.
func parseAL2Script(n *Node, script string) error {
	call := script[strings.Index(script, bootstrapScript)+len(bootstrapScript):]
	call = strings.ReplaceAll(call, "\\\n", " ")
	if i := strings.IndexByte(call, '\n'); i >= 0 {
		call = call[:i]
	}
	args, err := shellWords(call)
	if err != nil {
		return fmt.Errorf("bootstrap.sh arguments: %w", err)
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		// bootstrap.sh takes --flag value and, as hand-written calls often have it, --flag=value.
		inline, hasInline := "", false
		if strings.HasPrefix(a, "--") {
			a, inline, hasInline = strings.Cut(a, "=")
		}
		next := func() string {
			if hasInline {
				return inline
			}
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch a {
		case "--apiserver-endpoint":
			n.APIServerEndpoint = next()
		case "--b64-cluster-ca":
			n.CABundle = next()
		case "--dns-cluster-ip":
			n.ClusterDNS = []string{next()}
		case "--use-max-pods":
			next()
		case "--local-disks":
			n.InstanceStoreRAID0 = next() == "raid0"
		case "--kubelet-extra-args":
			extra, err := shellWords(next())
			if err != nil {
				return fmt.Errorf("--kubelet-extra-args: %w", err)
			}
			if err := applyKubeletFlags(n, extra); err != nil {
				return err
			}
		default:
			if !strings.HasPrefix(a, "--") && n.ClusterName == "" {
				n.ClusterName = a
			}
		}
	}
	return nil
}

// shellWords splits a command line on blanks, honouring single and double quotes; enough for
// what renderAL2 writes and for hand-written bootstrap calls.
func shellWords(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		quote rune
		inWrd bool
	)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWrd = r, true
		case r == ' ' || r == '\t':
			if inWrd {
				words = append(words, cur.String())
				cur.Reset()
				inWrd = false
			}
		default:
			cur.WriteRune(r)
			inWrd = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if inWrd {
		words = append(words, cur.String())
	}
	return words, nil
}

// kubeletFlags are the kubelet arguments the AL2 and Windows bootstrap scripts both take as
// their extra kubelet args: labels, taints (with the unregistered one), max pods, reservations
// and the hard eviction thresholds.
func kubeletFlags(n Node) []string {
	flags := []string{
		fmt.Sprintf("--node-labels=%q", labelFlag(n.Labels)),
		fmt.Sprintf("--register-with-taints=%q", taintFlag(n.taintsWithUnregistered())),
	}
	if n.MaxPods > 0 {
		flags = append(flags, fmt.Sprintf("--max-pods=%d", n.MaxPods))
	}
	if len(n.KubeReserved) > 0 {
		flags = append(flags, "--kube-reserved="+mapFlag(n.KubeReserved, "="))
	}
	if len(n.SystemReserved) > 0 {
		flags = append(flags, "--system-reserved="+mapFlag(n.SystemReserved, "="))
	}
	if len(n.EvictionHard) > 0 {
		flags = append(flags, "--eviction-hard="+mapFlag(n.EvictionHard, "<"))
	}
	return flags
}
