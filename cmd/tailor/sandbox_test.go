package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-sh/tailor/pkg/sandbox"
)

// TestSandboxRunsAnotherClustersManifests: `tailor sandbox --cluster-name prod-east --region
// us-east-1 --apply DIR --kubeconfig DIR/kc/kubeconfig` applies an EC2NodeClass and NodePool
// written for that cluster unchanged. On the emulator the class turns Ready (its discovery tags
// and role match the emulated account) and the pods run on a node in the us-east-1 zone the
// NodePool requires; the fake cloud launches there too. The kubeconfig's folder is inside the
// applied one, so nothing the sandbox writes there may be applied.
func TestSandboxRunsAnotherClustersManifests(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane; skipped in -short mode")
	}
	for _, cloudName := range []string{"aws", "fake"} {
		t.Run(cloudName, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, "testdata/prod-east", dir)
			var out bytes.Buffer
			err := runSandbox(context.Background(), &out, &sandboxFlags{
				kubeconfig: filepath.Join(dir, "kc", "kubeconfig"), apply: []string{dir},
				untilSettled: true, timeout: 2 * time.Minute, report: "json", cloud: cloudName,
				logFile: filepath.Join(t.TempDir(), "tailor.log"), account: account{cluster: "prod-east", region: "us-east-1"},
			})
			if err != nil {
				t.Fatalf("tailor sandbox: %v\n%s", err, out.String())
			}
			var report sandbox.Report
			if err := json.Unmarshal(out.Bytes(), &report); err != nil {
				t.Fatalf("report is not JSON: %v\n%s", err, out.String())
			}
			if len(report.Pods) != 3 || len(report.Nodes) == 0 {
				t.Fatalf("%d pods on %d nodes, want 3 pods on some", len(report.Pods), len(report.Nodes))
			}
			for _, p := range report.Pods {
				if p.Phase != string(corev1.PodRunning) {
					t.Errorf("pod %s is %s (%s)", p.Name, p.Phase, p.Reason)
				}
			}
			for _, n := range report.Nodes {
				if n.Zone != "us-east-1a" || n.Labels[corev1.LabelTopologyRegion] != "us-east-1" || n.CapacityType != "on-demand" {
					t.Errorf("node %s: zone %q, region %q, capacity type %q", n.Name, n.Zone, n.Labels[corev1.LabelTopologyRegion], n.CapacityType)
				}
				// EC2 names us-east-1 instances in its first private domain.
				if cloudName == "aws" && !strings.HasSuffix(n.Name, ".ec2.internal") {
					t.Errorf("node %s is not named like a us-east-1 instance", n.Name)
				}
			}
			if cloudName == "aws" && (len(report.NodeClasses) != 1 || report.NodeClasses[0].Ready != "True") {
				t.Errorf("EC2NodeClass default not Ready: %+v", report.NodeClasses)
			}
		})
	}
}

// TestSandboxSaysWhyAnotherClustersClassIsNotReady: the same manifests without --cluster-name
// select nothing in the sandbox's account. The sandbox settles (nothing more will happen), and
// the report says why the class is not ready and which flag fixes it; the pods say why they wait.
func TestSandboxSaysWhyAnotherClustersClassIsNotReady(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane; skipped in -short mode")
	}
	dir := t.TempDir()
	copyDir(t, "testdata/prod-east", dir)
	var out bytes.Buffer
	err := runSandbox(context.Background(), &out, &sandboxFlags{
		kubeconfig: filepath.Join(t.TempDir(), "kubeconfig"), apply: []string{dir},
		untilSettled: true, timeout: time.Minute, report: "json", cloud: "aws",
		logFile: filepath.Join(t.TempDir(), "tailor.log"), account: account{cluster: "tailor", region: "us-east-1"},
	})
	if err != nil {
		t.Fatalf("tailor sandbox: %v\n%s", err, out.String())
	}
	var report sandbox.Report
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out.String())
	}
	if len(report.NodeClasses) != 1 || report.NodeClasses[0].Ready != "False" ||
		!strings.Contains(report.NodeClasses[0].Message, "SubnetsNotFound") || !strings.Contains(report.NodeClasses[0].Message, "--cluster-name") {
		t.Errorf("the report does not say the class selects no subnet and how to fix it: %+v", report.NodeClasses)
	}
	if len(report.Nodes) != 0 || len(report.Pods) != 3 {
		t.Fatalf("%d pods on %d nodes, want 3 pods and no node", len(report.Pods), len(report.Nodes))
	}
	for _, p := range report.Pods {
		if p.Phase != string(corev1.PodPending) || !strings.Contains(p.Reason, "SubnetsNotFound") {
			t.Errorf("pod %s: %s, %q; want Pending for SubnetsNotFound", p.Name, p.Phase, p.Reason)
		}
	}
}

// A region that is not one, or no cluster name, is refused before anything starts, naming the flag.
func TestSandboxRefusesABadAccount(t *testing.T) {
	for _, tc := range []struct {
		acct account
		want string
	}{
		{account{cluster: "prod", region: "us-east"}, `--region: region "us-east" is not an AWS region name`},
		{account{cluster: "prod", region: "Oregon"}, `--region: region "Oregon"`},
		{account{cluster: "", region: "us-east-1"}, "--cluster-name is empty"},
	} {
		dir := t.TempDir()
		err := runSandbox(context.Background(), &bytes.Buffer{}, &sandboxFlags{kubeconfig: filepath.Join(dir, "kubeconfig"),
			cloud: "aws", account: tc.acct})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.acct, err, tc.want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%+v: the refused sandbox wrote %d files", tc.acct, len(entries))
		}
	}
}

// --apply never applies the sandbox's own files, even when its kubeconfig is named *.yaml and
// lives, with the sandbox's data, inside the applied folder.
func TestManifestsToApplySkipsTheSandboxsOwnFiles(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, "testdata/prod-east", dir)
	kubeconfig := filepath.Join(dir, "kc", "kubeconfig.yaml")
	data := filepath.Join(dir, "kc", "run-1")
	for _, f := range []string{kubeconfig, filepath.Join(data, "scheduler-config.yaml")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	files, err := manifestsToApply([]string{dir}, kubeconfig, data)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	if got := strings.Join(names, ","); got != "ec2nodeclass.yaml,inflate.yaml,nodepool.yaml" {
		t.Errorf("applied %s", got)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
