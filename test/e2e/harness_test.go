// Package e2e tests Tailor against a real control plane: embedded etcd, an in-process
// kube-apiserver, the real kube-scheduler with Tailor's plugin, kwok for kubelets and the fake
// cloud. Each test gets its own cluster.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/cloud/fake/kubelet"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/pkg/webhook"
)

// env is one test's cluster.
type env struct {
	t       *testing.T
	ctx     context.Context
	cluster *sandbox.Cluster
	cloud   *fake.Provider
	// clock is Tailor's clock; tests move it forward to pass timeouts without waiting.
	clock *sandbox.OffsetClock
	// allowStranded is set by the tests that strand a pod on purpose: every other test fails
	// when Tailor reports a pod stranded beside the node a plan put it on (see expectNoStranded).
	allowStranded bool
}

// joinerFunc lets a test stand between the cloud and the kubelets it starts.
type joinerFunc func(ctx context.Context, inst fake.Instance) error

func (f joinerFunc) Join(ctx context.Context, inst fake.Instance) error { return f(ctx, inst) }

func newEnv(t *testing.T) *env { return newEnvWithJoiner(t, nil) }

// newEnvWithJoiner starts a cluster whose instances register through wrap, given the joiner that
// registers them with the cluster.
func newEnvWithJoiner(t *testing.T, wrap func(fake.Joiner) fake.Joiner) *env {
	t.Helper()
	return startEnv(t, wrap, nil)
}

// newEnvWithWebhook starts a cluster whose scheduler also serves the mutating webhook, at
// e.cluster.WebhookURL.
func newEnvWithWebhook(t *testing.T, o webhook.Options) *env {
	t.Helper()
	return startEnv(t, nil, &o)
}

// startEnv starts a cluster; with, if given, changes the sandbox's options first.
func startEnv(t *testing.T, wrap func(fake.Joiner) fake.Joiner, hook *webhook.Options, with ...func(*sandbox.Options)) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e tests start a control plane; skipped in -short mode")
	}
	ctx, cancel := context.WithCancel(context.Background())
	ctx = klog.NewContext(ctx, klog.Background())
	e := &env{t: t, ctx: ctx, clock: &sandbox.OffsetClock{}}
	opts := sandbox.Options{
		Dir:   t.TempDir(),
		Clock: e.clock,
		// Karpenter's 15 s validation period and 10 s poll would make every disruption test
		// wait; the re-check itself is the same.
		TailorArgs: sandbox.QuickDisruptionArgs(),
		Webhook:    hook,
		NewCloud: func(kube kubernetes.Interface) cloud.CloudProvider {
			var joiner fake.Joiner = &kubelet.Joiner{Client: kube}
			if wrap != nil {
				joiner = wrap(joiner)
			}
			e.cloud = fake.New(fake.Options{Clock: e.clock, ClusterName: "e2e", Joiner: joiner})
			return e.cloud
		},
	}
	for _, f := range with {
		f(&opts)
	}
	cluster, err := sandbox.Start(ctx, t, opts)
	if err != nil {
		cancel()
		t.Fatalf("starting the sandbox: %v", err)
	}
	e.cluster = cluster
	t.Cleanup(func() {
		cluster.Stop()
		cancel()
	})
	t.Cleanup(e.expectNoStranded)
	// The clean-up tests and BenchmarkBurst fail on a stage kwok failed to play; every other test
	// says so, an outage test's refused patches among them.
	t.Cleanup(func() {
		if n := cluster.KubeletStageErrors(); n != 0 {
			t.Logf("kwok failed to play %d stages (\"failed to apply stage\" in the log)", n)
		}
	})
	return e
}

// expectNoStranded fails the test if Tailor found a pod stranded, or a node it launched unused:
// the promise that no pod is left pending beside capacity launched for it holds in every test.
func (e *env) expectNoStranded() {
	if e.allowStranded || e.t.Failed() {
		return
	}
	for _, reason := range []string{"Stranded", "Unused"} {
		events, err := e.cluster.Kube.EventsV1().Events("").List(context.Background(), metav1.ListOptions{FieldSelector: "reason=" + reason})
		if err != nil {
			e.t.Errorf("listing %s Events: %v", reason, err)
			continue
		}
		for _, ev := range events.Items {
			e.t.Errorf("%s %s/%s: %s", reason, ev.Regarding.Namespace, ev.Regarding.Name, ev.Note)
		}
	}
}

// applyExample creates the objects of one file under examples/.
func (e *env) applyExample(name string) {
	e.t.Helper()
	path := filepath.Join("..", "..", "examples", name)
	if err := sandbox.ApplyFiles(e.ctx, e.cluster.Config, []string{path}, nil); err != nil {
		e.t.Fatalf("applying %s: %v", path, err)
	}
}

func (e *env) createNodePool(np *karpv1.NodePool) *karpv1.NodePool {
	e.t.Helper()
	out, err := e.cluster.Tailor.KarpenterV1().NodePools().Create(e.ctx, np, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating NodePool %s: %v", np.Name, err)
	}
	return out
}

// nodePool is a NodePool over the fake catalog with the given requirements, in the style of the
// examples, and no limits.
func nodePool(name string, reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodePool {
	np := &karpv1.NodePool{}
	if err := yaml.Unmarshal([]byte(fmt.Sprintf(`
metadata: {name: %s}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: kubernetes.io/os, operator: In, values: [linux]}
`, name)), np); err != nil {
		panic(err)
	}
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, reqs...)
	return np
}

func deploymentOf(name string, replicas int32, cpu, memory string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       podSpec(cpu, memory),
			},
		},
	}
}

func podSpec(cpu, memory string) corev1.PodSpec {
	return corev1.PodSpec{
		SchedulerName:                 "tailor",
		TerminationGracePeriodSeconds: ptr.To[int64](0),
		Containers: []corev1.Container{{
			Name:  "pause",
			Image: "pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(cpu),
				corev1.ResourceMemory: resource.MustParse(memory),
			}},
		}},
	}
}

// waitFor polls cond until it holds or the timeout passes, and then fails the test with the last
// thing cond said.
func (e *env) waitFor(what string, timeout time.Duration, cond func() (bool, string)) {
	e.t.Helper()
	last := ""
	err := wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, why := cond()
		last = why
		return ok, nil
	})
	if err != nil {
		e.t.Fatalf("waiting for %s: %v; last state: %s", what, err, last)
	}
}

// runningPods waits until every pod with the label selector is Running on a node, and returns them.
func (e *env) waitRunning(selector string, want int, timeout time.Duration) []corev1.Pod {
	e.t.Helper()
	var pods []corev1.Pod
	e.waitFor(fmt.Sprintf("%d pods %q Running", want, selector), timeout, func() (bool, string) {
		list, err := e.cluster.Kube.CoreV1().Pods("").List(e.ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" {
				running++
			}
		}
		pods = list.Items
		return running == want && len(list.Items) == want, fmt.Sprintf("%d of %d pods running", running, len(list.Items))
	})
	return pods
}

func TestMain(m *testing.M) {
	os.Exit(m.Run())
}
