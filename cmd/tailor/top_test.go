package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tailor-sh/tailor/pkg/aws/ec2facts"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/pkg/top"
)

// TestTopAgainstTheSandbox runs `tailor sandbox --apply examples/` on the AWS emulator, waits for
// the inflate pods to run, and checks `tailor top --once -o json` against the API server (nodes,
// their pods and requests) and against the prices the sandbox's own cloud provider gives its
// nodes (its report). Then, with the scheduler that ran here, that every metric the chart's
// Grafana dashboard queries is served with the labels it uses.
func TestTopAgainstTheSandbox(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane; skipped in -short mode")
	}
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var report bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- runSandbox(ctx, &report, &sandboxFlags{kubeconfig: kubeconfig, apply: []string{filepath.Join("..", "..", "examples")},
			report: "json", cloud: "aws", logFile: filepath.Join(dir, "tailor.log"), account: account{cluster: sandboxClusterName, region: fake.Region}})
	}()
	kube := waitForInflate(t, kubeconfig, done)

	var out bytes.Buffer
	root := newRootCommand()
	root.SetOut(&out)
	root.SetArgs([]string{"top", "--once", "-o", "json", "--kubeconfig", kubeconfig})
	if err := root.Execute(); err != nil {
		t.Fatalf("tailor top: %v", err)
	}
	var snap top.Snapshot
	if err := json.Unmarshal(out.Bytes(), &snap); err != nil {
		t.Fatalf("tailor top -o json: %v\n%s", err, out.String())
	}
	nodes, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := kube.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// While the scheduler still runs: the apiserver's collectors in the same registry wait on
	// etcd once it is gone.
	checkDashboardServed(t)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("tailor sandbox: %v", err)
	}
	var rep sandbox.Report
	if err := json.Unmarshal(report.Bytes(), &rep); err != nil {
		t.Fatalf("sandbox report: %v\n%s", err, report.String())
	}

	// Nodes and pods as the API server has them.
	type usage struct{ pods, cpu int64 }
	want := map[string]*usage{}
	for _, n := range nodes.Items {
		want[n.Name] = &usage{}
	}
	running := 0
	for _, p := range pods.Items {
		if u := want[p.Spec.NodeName]; u != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			u.pods++
			running++
			for _, c := range p.Spec.Containers {
				u.cpu += c.Resources.Requests.Cpu().MilliValue()
			}
		}
	}
	if snap.Fleet.Nodes != len(nodes.Items) || len(snap.Nodes) != len(nodes.Items) || snap.Fleet.Pods != running || running < 5 {
		t.Errorf("top: %d nodes, %d pods; the API: %d nodes, %d pods on them", snap.Fleet.Nodes, snap.Fleet.Pods, len(nodes.Items), running)
	}
	prices := map[string]float64{}
	for _, n := range rep.Nodes {
		prices[n.Name] = n.PricePerHour
	}
	var total float64
	for _, n := range snap.Nodes {
		u := want[n.Name]
		if u == nil || int64(n.Pods) != u.pods || n.Usage.CPURequestedMilli != u.cpu {
			t.Errorf("node %s: top says %d pods requesting %dm cpu; the API %+v", n.Name, n.Pods, n.Usage.CPURequestedMilli, u)
		}
		p, ok := prices[n.Name]
		if !ok || !n.Priced || math.Abs(n.PricePerHour-p) > 1e-9 {
			t.Errorf("node %s (%s %s %s): top prices it $%v/h (priced %v), the sandbox's cloud $%v/h", n.Name, n.InstanceType, n.Zone, n.CapacityType, n.PricePerHour, n.Priced, p)
		}
		total += p
	}
	f := snap.Fleet
	if math.Abs(f.PricePerHour-total) > 1e-9 || f.PricePerHour <= 0 {
		t.Errorf("fleet $%v/h, the nodes' prices add up to $%v/h", f.PricePerHour, total)
	}
	// No fleet that holds the pods costs less than the bound, this one included.
	if f.LowerBoundPerHour <= 0 || f.LowerBoundPerHour > f.PricePerHour+1e-9 || math.Abs(f.PriceToBound-f.PricePerHour/f.LowerBoundPerHour) > 1e-9 {
		t.Errorf("bound $%v/h, ratio %v, for a fleet of $%v/h", f.LowerBoundPerHour, f.PriceToBound, f.PricePerHour)
	}
	if !strings.Contains(snap.Prices, "emulator") || !strings.Contains(snap.Prices, ec2facts.PriceSource(fake.Region)) {
		t.Errorf("prices from %q: want the emulator's Pricing API beside the sandbox's kubeconfig, saying what its prices are", snap.Prices)
	}
	if len(snap.NodePools) != 1 || snap.NodePools[0].Nodes != len(nodes.Items) || snap.NodePools[0].Limits["cpu"] == "" {
		t.Errorf("NodePools %+v", snap.NodePools)
	}

}

// waitForInflate waits until the sandbox wrote its kubeconfig and every inflate pod runs.
func waitForInflate(t *testing.T, kubeconfig string, done <-chan error) kubernetes.Interface {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	var kube kubernetes.Interface
	for last := ""; ; time.Sleep(250 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("the sandbox stopped: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the inflate pods did not run within 3 minutes: %s", last)
		}
		if kube == nil {
			if _, err := os.Stat(kubeconfig); err != nil {
				continue
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				continue
			}
			if kube, err = kubernetes.NewForConfig(cfg); err != nil {
				t.Fatal(err)
			}
		}
		pods, err := kube.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=inflate"})
		if err != nil {
			last = err.Error()
			continue
		}
		runningPods := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				runningPods++
			}
		}
		last = fmt.Sprintf("%d of %d inflate pods Running", runningPods, len(pods.Items))
		if len(pods.Items) == 5 && runningPods == 5 {
			return kube
		}
	}
}

// Flags that cannot work are refused before any cluster is asked, naming the flag.
func TestTopRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", "json"}, "with --once"},
		{[]string{"--once", "-o", "yaml"}, `-o "yaml"`},
		{[]string{"--once", "--sort", "size"}, `--sort="size"`},
		{[]string{"--once", "-l", "a in (b"}, "--selector"},
		{[]string{"--once", "--kubeconfig", filepath.Join(t.TempDir(), "none")}, "--kubeconfig"},
	} {
		root := newRootCommand()
		root.SetOut(&bytes.Buffer{})
		root.SetArgs(append([]string{"top"}, tc.args...))
		if err := root.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("tailor top %v: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
}
