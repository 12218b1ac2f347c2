package userdata

import (
	"fmt"
	"strings"
)

// windowsBootstrap is the EKS bootstrap script of the EKS-optimized Windows AMIs.
const windowsBootstrap = `[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\Amazon\EKS\Start-EKSBootstrap.ps1"`

// renderWindows writes one <powershell> block, as EC2Launch runs it: the node class's own
// PowerShell first (so it can prepare the host before the kubelet starts), then the EKS bootstrap
// script with the cluster and the kubelet's flags. The node class's userData is PowerShell
// statements; a <powershell> wrapper around it is taken off, since EC2Launch runs only the first
// block and a nested one would end the script early.
func renderWindows(n Node, custom string) (string, error) {
	body, err := windowsStatements(custom)
	if err != nil {
		return "", fmt.Errorf("spec.userData: %w", err)
	}
	var b strings.Builder
	b.WriteString("<powershell>\n")
	if body != "" {
		b.WriteString(body + "\n")
	}
	b.WriteString(windowsBootstrap + "\n")
	fmt.Fprintf(&b, "& $EKSBootstrapScriptFile -EKSClusterName '%s' -APIServerEndpoint '%s'", n.ClusterName, n.APIServerEndpoint)
	if n.CABundle != "" {
		fmt.Fprintf(&b, " -Base64ClusterCA '%s'", n.CABundle)
	}
	flags := kubeletFlags(n)
	fmt.Fprintf(&b, " -KubeletExtraArgs '%s'", strings.Join(flags, " "))
	if len(n.ClusterDNS) > 0 {
		fmt.Fprintf(&b, " -DNSClusterIP '%s'", n.ClusterDNS[0])
	}
	b.WriteString("\n</powershell>")
	return b.String(), nil
}

// windowsStatements is the node class's PowerShell without a <powershell> wrapper. A single
// quote is refused inside it nowhere, but a second <powershell> block is: EC2Launch would not
// run it.
func windowsStatements(custom string) (string, error) {
	s := strings.TrimSpace(custom)
	if inner, ok := strings.CutPrefix(s, "<powershell>"); ok {
		var closed bool
		if s, closed = strings.CutSuffix(inner, "</powershell>"); !closed {
			return "", fmt.Errorf("a <powershell> block without its closing </powershell>")
		}
		s = strings.TrimSpace(s)
	}
	if strings.Contains(s, "<powershell>") || strings.Contains(s, "</powershell>") {
		return "", fmt.Errorf("more than one <powershell> block; Windows user data is one block of PowerShell statements, which Tailor runs before the EKS bootstrap")
	}
	return s, nil
}

// parseWindows reads the bootstrap call the way Start-EKSBootstrap.ps1 reads its parameters.
func parseWindows(data string) (Node, error) {
	var n Node
	i := strings.Index(data, "& $EKSBootstrapScriptFile")
	if i < 0 {
		return n, fmt.Errorf("PowerShell user data does not call the EKS bootstrap script ($EKSBootstrapScriptFile)")
	}
	call := data[i+len("& $EKSBootstrapScriptFile"):]
	if j := strings.IndexByte(call, '\n'); j >= 0 {
		call = call[:j]
	}
	args, err := shellWords(call)
	if err != nil {
		return n, fmt.Errorf("Start-EKSBootstrap.ps1 arguments: %w", err)
	}
	for k := 0; k+1 < len(args); k += 2 {
		value := args[k+1]
		switch args[k] {
		case "-EKSClusterName":
			n.ClusterName = value
		case "-APIServerEndpoint":
			n.APIServerEndpoint = value
		case "-Base64ClusterCA":
			n.CABundle = value
		case "-DNSClusterIP":
			n.ClusterDNS = []string{value}
		case "-KubeletExtraArgs":
			flags, err := shellWords(value)
			if err != nil {
				return n, fmt.Errorf("-KubeletExtraArgs: %w", err)
			}
			if err := applyKubeletFlags(&n, flags); err != nil {
				return n, err
			}
		default:
			return n, fmt.Errorf("Start-EKSBootstrap.ps1 has no parameter %q", args[k])
		}
	}
	return n, nil
}
