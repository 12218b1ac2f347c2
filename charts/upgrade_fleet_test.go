package charts

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/sandbox"
)

// fleetNamespace is opted in to Tailor by the chart's webhook: its pods name no scheduler.
const fleetNamespace = "shop"

// fleetNodePool is examples/nodepool.yaml with consolidation put off past the test's end, so that
// any NodeClaim launched or deleted while the test runs is the upgrade's doing (drift included:
// it is not put off), and with 4-vCPU types only, so that the fleet is several nodes.
const fleetNodePool = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      requirements:
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: ["c", "m", "r"]}
        - {key: karpenter.sh/capacity-type, operator: In, values: ["on-demand"]}
        - {key: kubernetes.io/arch, operator: In, values: ["amd64"]}
        - {key: karpenter.k8s.aws/instance-cpu, operator: In, values: ["4"]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfter: 720h
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1h
`

// startFleet labels the fleet's namespace for the webhook, creates the EC2NodeClass, the
// NodePool and a Deployment of replicas pods, and waits until they run on nodes Tailor launched.
func startFleet(ctx context.Context, t *testing.T, c *sandbox.Cluster, replicas int32) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetNamespace, Labels: map[string]string{"scheduling.tailor.sh/enabled": "true"}}}
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.ApplyFiles(ctx, c.Config, []string{"../examples/ec2nodeclass.yaml"}, nil); err != nil {
		t.Fatal(err)
	}
	np := &karpv1.NodePool{}
	if err := yaml.UnmarshalStrict([]byte(fleetNodePool), np); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Tailor.KarpenterV1().NodePools().Create(ctx, np, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: fleetNamespace}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "pause", Image: "pause:3.10", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("2Gi")}}}},
		}},
	}}
	if _, err := c.Kube.AppsV1().Deployments(fleetNamespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the fleet to run on initialized nodes", 90*time.Second, func() (bool, string) {
		f, err := readFleet(ctx, c)
		if err != nil {
			return false, err.Error()
		}
		return f.running == int(replicas) && len(f.pods) == int(replicas) && f.initialized == len(f.claims) && len(f.claims) > 0,
			fmt.Sprintf("%d of %d pods running, %d of %d NodeClaims initialized", f.running, len(f.pods), f.initialized, len(f.claims))
	})
}

// scale sets the fleet's Deployment to replicas and waits until they all run.
func scale(ctx context.Context, t *testing.T, c *sandbox.Cluster, replicas int32) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	if _, err := c.Kube.AppsV1().Deployments(fleetNamespace).Patch(ctx, "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, fmt.Sprintf("%d pods of the fleet to run", replicas), 60*time.Second, func() (bool, string) {
		f, err := readFleet(ctx, c)
		if err != nil {
			return false, err.Error()
		}
		return f.running == int(replicas), fmt.Sprintf("%d of %d pods running", f.running, len(f.pods))
	})
}

// fleet is what an upgrade must leave alone: NodeClaims, nodes and pods by name, each with its
// UID (a relaunched or recreated object has a new one), pods with their node and restarts.
type fleet struct {
	claims, nodes, pods map[string]string
	running             int
	initialized         int
}

func readFleet(ctx context.Context, c *sandbox.Cluster) (*fleet, error) {
	f := &fleet{claims: map[string]string{}, nodes: map[string]string{}, pods: map[string]string{}}
	claims, err := c.Tailor.KarpenterV1().NodeClaims().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, nc := range claims.Items {
		f.claims[nc.Name] = fmt.Sprintf("%s deleting=%t", nc.UID, nc.DeletionTimestamp != nil)
		if nc.IsTrue(karpv1.ConditionTypeInitialized) {
			f.initialized++
		}
	}
	nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, n := range nodes.Items {
		f.nodes[n.Name] = fmt.Sprintf("%s unschedulable=%t", n.UID, n.Spec.Unschedulable)
	}
	pods, err := c.Kube.CoreV1().Pods(fleetNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		restarts := int32(0)
		for _, s := range p.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
		f.pods[p.Name] = fmt.Sprintf("%s on %s, scheduler %s, %d restarts, deleting=%t", p.UID, p.Spec.NodeName, p.Spec.SchedulerName, restarts, p.DeletionTimestamp != nil)
		if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" {
			f.running++
		}
	}
	return f, nil
}

// sameFleet fails the test for every NodeClaim, node or pod that differs from before.
func sameFleet(t *testing.T, step string, before, after *fleet) {
	t.Helper()
	for kind, m := range map[string][2]map[string]string{"NodeClaim": {before.claims, after.claims}, "node": {before.nodes, after.nodes}, "pod": {before.pods, after.pods}} {
		for _, name := range slices.Sorted(maps.Keys(m[0])) {
			if m[1][name] != m[0][name] {
				t.Errorf("%s: %s %s was %q, now %q", step, kind, name, m[0][name], m[1][name])
			}
		}
		for _, name := range slices.Sorted(maps.Keys(m[1])) {
			if _, ok := m[0][name]; !ok {
				t.Errorf("%s: a new %s %s: %s", step, kind, name, m[1][name])
			}
		}
	}
}

// disruptionReasons are the Events of a pod evicted, or of a node disrupted or replaced.
var disruptionReasons = []string{"Evicted", "Disrupted", "DisruptionLaunching", "DisruptionTerminating", "DisruptionWaitingReadiness",
	"Disrupting", "Killing", "Preempted"}

// noDisruptionEvents fails the test for every Event, in any namespace, that says a pod was
// evicted or a node disrupted.
func noDisruptionEvents(ctx context.Context, t *testing.T, c *sandbox.Cluster, step string) {
	t.Helper()
	events, err := c.Kube.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if slices.Contains(disruptionReasons, e.Reason) {
			t.Errorf("%s: Event %s on %s %s/%s: %s", step, e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name, e.Message)
		}
	}
}

// webhookProbe asks the API server, every 50 ms, to create (dry run) a pod in the fleet's
// namespace; each answer must carry schedulerName tailor, which only the webhook sets. With the
// chart's failurePolicy Ignore, a webhook that does not answer shows as a pod left with the
// default scheduler, not as an error.
type webhookProbe struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	asked  int
	missed []string
}

func startWebhookProbe(ctx context.Context, c *sandbox.Cluster) *webhookProbe {
	ctx, cancel := context.WithCancel(ctx)
	p := &webhookProbe{cancel: cancel, done: make(chan struct{})}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: "pause:3.10"}}}}
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			got, err := c.Kube.CoreV1().Pods(fleetNamespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			p.mu.Lock()
			switch {
			case ctx.Err() != nil:
			case err != nil:
				p.asked++
				p.missed = append(p.missed, time.Now().Format("15:04:05.000")+" "+err.Error())
			case got.Spec.SchedulerName != "tailor":
				p.asked++
				p.missed = append(p.missed, time.Now().Format("15:04:05.000")+" schedulerName "+got.Spec.SchedulerName)
			default:
				p.asked++
			}
			p.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return p
}

// stop ends the probe and fails the test if the webhook missed a call, or was asked too rarely to
// tell.
func (p *webhookProbe) stop(t *testing.T, step string) {
	t.Helper()
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Logf("%s: the webhook answered %d of %d calls", step, p.asked-len(p.missed), p.asked)
	if len(p.missed) > 0 {
		t.Errorf("%s: the webhook missed %d of %d calls:\n%s", step, len(p.missed), p.asked, strings.Join(p.missed, "\n"))
	}
	if p.asked < 20 {
		t.Errorf("%s: the webhook was asked only %d times", step, p.asked)
	}
}

// waitFor polls cond until it holds or the timeout passes, then fails the test with the last
// thing cond said.
func waitFor(ctx context.Context, t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	last := ""
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, why := cond()
		last = why
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last: %s", what, err, last)
	}
}
