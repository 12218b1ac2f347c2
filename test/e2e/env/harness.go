// Package env is the environment every e2e suite under test/e2e runs in: a real control plane
// (embedded etcd, an in-process kube-apiserver, the real kube-scheduler with Tailor's plugin, kwok
// for kubelets) over the fake cloud (New) or the real AWS provider against the emulator (NewAWS),
// one per test, stopped when the test ends; and the waits, objects and assertions the suites
// share. A helper only one suite uses lives in that suite.
package env

import (
	"context"
	"fmt"
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

// Env is one test's cluster. Its helpers fail T; none of them may be called after the test ends.
type Env struct {
	T *testing.T
	// Ctx ends when the test does.
	Ctx     context.Context
	Cluster *sandbox.Cluster
	// Cloud is the fake cloud; nil in an AWS environment, whose cloud is AWS.Provider.
	Cloud *fake.Provider
	// Clock is Tailor's clock; tests move it forward to pass timeouts without waiting.
	Clock *sandbox.OffsetClock
	// AllowStranded is set by the tests that strand a pod on purpose: every other test fails
	// when Tailor reports a pod stranded beside the node a plan put it on (see ExpectNoStranded).
	AllowStranded bool
}

// JoinerFunc lets a test stand between the cloud and the kubelets it starts.
type JoinerFunc func(ctx context.Context, inst fake.Instance) error

// Join calls f.
func (f JoinerFunc) Join(ctx context.Context, inst fake.Instance) error { return f(ctx, inst) }

// New starts a cluster on the fake cloud, with Tailor's quick disruption args; in -short mode it
// skips the test.
func New(t *testing.T) *Env { return NewWithJoiner(t, nil) }

// NewWithJoiner starts a cluster whose instances register through wrap, given the joiner that
// registers them with the cluster.
func NewWithJoiner(t *testing.T, wrap func(fake.Joiner) fake.Joiner) *Env {
	t.Helper()
	return Start(t, wrap, nil)
}

// NewWithWebhook starts a cluster whose scheduler also serves the mutating webhook, at
// e.Cluster.WebhookURL.
func NewWithWebhook(t *testing.T, o webhook.Options) *Env {
	t.Helper()
	return Start(t, nil, &o)
}

// Start starts a cluster on the fake cloud whose instances register through wrap (if given), with
// the webhook if hook is given; with, if given, changes the sandbox's options first.
func Start(t *testing.T, wrap func(fake.Joiner) fake.Joiner, hook *webhook.Options, with ...func(*sandbox.Options)) *Env {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e tests start a control plane; skipped in -short mode")
	}
	ctx, cancel := context.WithCancel(context.Background())
	ctx = klog.NewContext(ctx, klog.Background())
	e := &Env{T: t, Ctx: ctx, Clock: &sandbox.OffsetClock{}}
	opts := sandbox.Options{
		Dir:   t.TempDir(),
		Clock: e.Clock,
		// Karpenter's 15 s validation period and 10 s poll would make every disruption test
		// wait; the re-check itself is the same.
		TailorArgs: sandbox.QuickDisruptionArgs(),
		Webhook:    hook,
		NewCloud: func(kube kubernetes.Interface) cloud.CloudProvider {
			var joiner fake.Joiner = &kubelet.Joiner{Client: kube}
			if wrap != nil {
				joiner = wrap(joiner)
			}
			e.Cloud = fake.New(fake.Options{Clock: e.Clock, ClusterName: "e2e", Joiner: joiner})
			return e.Cloud
		},
	}
	e.StartCluster(ctx, cancel, opts, with)
	// The clean-up tests and BenchmarkBurst fail on a stage kwok failed to play; every other test
	// says so, an outage test's refused patches among them.
	t.Cleanup(func() {
		if n := e.Cluster.KubeletStageErrors(); n != 0 {
			t.Logf("kwok failed to play %d stages (\"failed to apply stage\" in the log)", n)
		}
	})
	return e
}

// ExpectNoStranded fails the test if Tailor found a pod stranded, or a node it launched unused:
// the promise that no pod is left pending beside capacity launched for it holds in every test.
func (e *Env) ExpectNoStranded() {
	if e.AllowStranded || e.T.Failed() {
		return
	}
	for _, reason := range []string{"Stranded", "Unused"} {
		events, err := e.Cluster.Kube.EventsV1().Events("").List(context.Background(), metav1.ListOptions{FieldSelector: "reason=" + reason})
		if err != nil {
			e.T.Errorf("listing %s Events: %v", reason, err)
			continue
		}
		for _, ev := range events.Items {
			e.T.Errorf("%s %s/%s: %s", reason, ev.Regarding.Namespace, ev.Regarding.Name, ev.Note)
		}
	}
}

// ApplyExample creates the objects of one file under examples/.
func (e *Env) ApplyExample(name string) {
	e.T.Helper()
	path := RepoPath("examples", name)
	if err := sandbox.ApplyFiles(e.Ctx, e.Cluster.Config, []string{path}, nil); err != nil {
		e.T.Fatalf("applying %s: %v", path, err)
	}
}

// CreateNodePool creates np and returns it as the API server stored it.
func (e *Env) CreateNodePool(np *karpv1.NodePool) *karpv1.NodePool {
	e.T.Helper()
	out, err := e.Cluster.Tailor.KarpenterV1().NodePools().Create(e.Ctx, np, metav1.CreateOptions{})
	if err != nil {
		e.T.Fatalf("creating NodePool %s: %v", np.Name, err)
	}
	return out
}

// NodePool is a NodePool over the fake catalog with the given requirements, in the style of the
// examples, and no limits.
func NodePool(name string, reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodePool {
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

// DeploymentOf is a Deployment in default of replicas pods labelled app=name, each asking for cpu
// and memory (see PodSpec).
func DeploymentOf(name string, replicas int32, cpu, memory string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       PodSpec(cpu, memory),
			},
		},
	}
}

// PodSpec is a pod for Tailor (schedulerName tailor) of one pause container asking for cpu and
// memory, deleted at once (no grace period).
func PodSpec(cpu, memory string) corev1.PodSpec {
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

// WaitFor polls cond until it holds or the timeout passes, and then fails the test with the last
// thing cond said.
func (e *Env) WaitFor(what string, timeout time.Duration, cond func() (bool, string)) {
	e.T.Helper()
	last := ""
	err := wait.PollUntilContextTimeout(e.Ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, why := cond()
		last = why
		return ok, nil
	})
	if err != nil {
		e.T.Fatalf("waiting for %s: %v; last state: %s", what, err, last)
	}
}

// WaitRunning waits until every pod with the label selector is Running on a node, and returns them.
func (e *Env) WaitRunning(selector string, want int, timeout time.Duration) []corev1.Pod {
	e.T.Helper()
	var pods []corev1.Pod
	e.WaitFor(fmt.Sprintf("%d pods %q Running", want, selector), timeout, func() (bool, string) {
		list, err := e.Cluster.Kube.CoreV1().Pods("").List(e.Ctx, metav1.ListOptions{LabelSelector: selector})
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

// Apply creates the objects of manifest files, by paths relative to the suite's directory
// (testdata/...).
func (e *Env) Apply(paths ...string) {
	e.T.Helper()
	if err := sandbox.ApplyFiles(e.Ctx, e.Cluster.Config, paths, nil); err != nil {
		e.T.Fatalf("applying %v: %v", paths, err)
	}
}

// StartCluster starts the sandbox with opts, as each of with changes them, and stops it (and
// cancels ctx) when the test ends, after checking that no pod was left stranded.
func (e *Env) StartCluster(ctx context.Context, cancel context.CancelFunc, opts sandbox.Options, with []func(*sandbox.Options)) {
	t := e.T
	t.Helper()
	for _, f := range with {
		f(&opts)
	}
	cluster, err := sandbox.Start(ctx, t, opts)
	if err != nil {
		cancel()
		t.Fatalf("starting the sandbox: %v", err)
	}
	e.Cluster = cluster
	t.Cleanup(func() {
		cluster.Stop()
		cancel()
	})
	// Cleanups run last first: the fleet is logged while the cluster still runs, and after
	// ExpectNoStranded, whose failures it explains too.
	t.Cleanup(e.logFleetOnFailure)
	t.Cleanup(e.ExpectNoStranded)
}
