package provisioning

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/tailor-sh/tailor/internal/cputime"
	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/cloud/fake/kubelet"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/test/e2e/env"

	// HARNESS_KLOG sets klog's flags for a run that needs the provisioner's detailed log, e.g.
	// HARNESS_KLOG=-vmodule=provisioner=2 for each round's Planned line.
	_ "github.com/tailor-sh/tailor/test/harness"
)

// fleetPodsPerNode: a "large" of the fake catalog has 2 vCPUs, 1,930m or so allocatable, which
// holds four pods of fleetPodCPU and not five; every large has the memory for four of fleetPodMem.
const (
	fleetPodsPerNode = 4
	fleetPodCPU      = "450m"
	fleetPodMem      = "512Mi"
)

// BenchmarkFleetScale is issue 15's fleet at scale (item 6): a Deployment with a
// PodDisruptionBudget is scaled to TAILOR_SCALE_PODS pods (default 20,000) on a NodePool of small
// nodes that hold four each (about 5,000 nodes), then down to TAILOR_SCALE_DOWN (default a tenth),
// in the sandbox (etcd, kube-apiserver, kwok, Tailor's scheduler, the fake cloud, one process). It
// reports the seconds from the scale-up to every pod Running and from the scale-down to the
// fleet consolidated, the process's peak memory, the requests per second tailor-scheduler made,
// and the nodes at the peak and at the end. It fails if a pod is left Pending or the budget was
// broken; how long anything took is reported, never asserted.
func BenchmarkFleetScale(b *testing.B) {
	pods := envInt(b, "TAILOR_SCALE_PODS", 20000)
	down := envInt(b, "TAILOR_SCALE_DOWN", pods/10)
	b.Run(fmt.Sprintf("pods=%d", pods), func(b *testing.B) {
		for b.Loop() {
			fleetScaleOnce(b, pods, down)
		}
	})
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		fatalf(b, "%s=%q: want a positive number", name, v)
	}
	return n
}

func fleetScaleOnce(b *testing.B, pods, down int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx = klog.NewContext(ctx, klog.Background())
	// The timeouts only stop a run that went wrong; they grow with the fleet, as every step does,
	// and consolidation (thousands of nodes, a budget of a tenth of them at a time) the most.
	// TAILOR_SCALE_TIMEOUT (minutes) sets both.
	// On the shared two-core machine 4,000 pods took over 8 minutes to come up.
	runTimeout := 10*time.Minute + time.Duration(pods)*250*time.Millisecond
	consolidateTimeout := runTimeout
	if os.Getenv("TAILOR_SCALE_TIMEOUT") != "" {
		runTimeout = time.Duration(envInt(b, "TAILOR_SCALE_TIMEOUT", 0)) * time.Minute
		consolidateTimeout = runTimeout
	}
	// A pass that finds no move takes longer on a larger fleet, so the count may hold still that
	// long between removals; TAILOR_SCALE_SETTLE (seconds) overrides.
	settle := time.Duration(envInt(b, "TAILOR_SCALE_SETTLE", 30+pods/200)) * time.Second
	proxy := &countingProxy{counts: map[string]int{}}
	clk := &sandbox.OffsetClock{}
	// The API server's harness logs through its TB; a benchmark keeps only the first lines of
	// its own log, which would then hold none of the figures. ProcessTB sends them to klog.
	tb := sandbox.NewProcessTB("fleet", b.TempDir())
	defer tb.Close()
	// Closed once the cluster has stopped: the scheduler's connections go through it.
	defer proxy.close()
	cluster, err := sandbox.Start(ctx, tb, sandbox.Options{
		FeatureGates: fleetGates(),
		Dir:          b.TempDir(),
		Clock:        clk,
		// Karpenter's 15 s validation period and 10 s poll are fixed waits per command; the
		// benchmark is about what Tailor computes and asks of the API server at this size.
		TailorArgs:      sandbox.QuickDisruptionArgs(),
		SchedulerConfig: proxy.start,
		// Thousands of pods to create and run: the controllers and kwok must keep up, so that
		// the time from the last pod created to the last bound is Tailor's.
		Throughput: sandbox.FleetThroughput(),
		NewCloud: func(kube kubernetes.Interface) cloud.CloudProvider {
			return fake.New(fake.Options{Clock: clk, ClusterName: "fleet", Joiner: &kubelet.Joiner{Client: kube}})
		},
	})
	if err != nil {
		fatalf(b, "starting the sandbox: %v", err)
	}
	defer cluster.Stop()
	// The benchmark's own watches end first: the API server waits for open watches, up to its
	// 60 s request timeout, before it stops.
	defer cancel()
	if err := sandbox.ApplyFiles(ctx, cluster.Config, []string{env.RepoPath("examples", "ec2nodeclass.yaml")}, nil); err != nil {
		b.Fatal(err)
	}
	np := env.NodePool("default", karpv1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelInstanceSize, Operator: "In", Values: []string{"large"}})
	np.Spec.Disruption.ConsolidateAfter = karpv1.NewNillableDuration(0)
	np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized
	if _, err := cluster.Tailor.KarpenterV1().NodePools().Create(ctx, np, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	maxUnavailable := intstr.FromString("10%")
	if _, err := cluster.Kube.PolicyV1().PodDisruptionBudgets("default").Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &maxUnavailable, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "fleet"}}},
	}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := cluster.Kube.AppsV1().Deployments("default").Create(ctx, env.DeploymentOf("fleet", 0, fleetPodCPU, fleetPodMem), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	claims := watchClaims(ctx, cluster)
	heap := sampleHeap(ctx)

	planning := planningSoFar(b)
	requestsBefore := apiRequests()
	cpuBefore := cputime.Process(b)
	began := time.Now()
	scaleFleet(b, ctx, cluster, pods)
	waitDeployment(b, ctx, cluster, pods, runTimeout)
	toRunning := time.Since(began)
	toBound := time.Unix(0, proxy.lastBinding.Load()).Sub(began)
	// Every part of the sandbox runs in this process: with its cores full, each step takes as
	// long as the CPU the whole process spends allows.
	cpuUp := cputime.Process(b) - cpuBefore
	reqAtPeak := proxy.total.Load()
	say("%d pods Running after %.1f s, the last bound after %.1f s, on %d NodeClaims (%d requests from tailor-scheduler so far)",
		pods, toRunning.Seconds(), toBound.Seconds(), claims.count(), reqAtPeak)
	lat, err := measurePods(ctx, cluster)
	if err != nil {
		fatalf(b, "listing the pods: %v", err)
	}
	createdToBound := lat.lastBound.Sub(lat.lastCreated)
	say("the last pod created %.0f s after the scale-up, the last bound %.0f s after that; creation to binding p50 %.0f s, p90 %.0f s (to the second)",
		lat.lastCreated.Sub(began.Truncate(time.Second)).Seconds(), createdToBound.Seconds(), lat.p50.Seconds(), lat.p90.Seconds())
	steps, err := measureSteps(ctx, cluster)
	if err != nil {
		fatalf(b, "breaking the pods' waits down: %v", err)
	}
	steps.report(b)
	say("the process (API server, etcd, kwok, the controllers and Tailor) used %.0f CPU-s in the scale-up, %.0f%% of its %d cores",
		cpuUp.Seconds(), 100*cpuUp.Seconds()/toRunning.Seconds()/float64(runtime.NumCPU()), runtime.NumCPU())
	b.ReportMetric(cpuUp.Seconds(), "cpu-s-up")
	b.ReportMetric(toRunning.Seconds(), "s-to-all-running")
	b.ReportMetric(toBound.Seconds(), "s-to-all-bound")
	b.ReportMetric(createdToBound.Seconds(), "s-last-created-to-last-bound")
	b.ReportMetric(lat.p50.Seconds(), "s-created-to-bound-p50")
	b.ReportMetric(lat.p90.Seconds(), "s-created-to-bound-p90")
	planned := planningSoFar(b).since(planning)
	say("the provisioner's rounds in the scale-up: %d planned, %.1f s planning; %d read the cluster and found nothing to plan, %d did not read it",
		planned.rounds, planned.seconds, planned.idle, planned.quiet)
	b.ReportMetric(float64(planned.rounds), "plan-rounds-up")
	b.ReportMetric(float64(planned.idle), "idle-rounds-up")
	b.ReportMetric(planned.seconds, "s-planning-up")
	say("tailor-scheduler's API requests in the scale-up: %s", proxy.latencies(8))
	say("the API server's requests in the scale-up, from every client: %s", topRequests(requestsBefore, apiRequests(), 14))
	say("etcd's disk in the scale-up: %s", etcdDisk())
	say("pods pending beside their node in the scale-up: %s", wakeUps())
	if os.Getenv("TAILOR_SCALE_UP_ONLY") != "" {
		return // the scale-up's figures alone, minutes sooner: for a change to how pods bind
	}

	// The budget is watched from here: during the scale-up the new pods are not healthy yet, and
	// the status says so without anything having been disrupted.
	pdb := watchPDB(b, ctx, cluster)
	scaledDown := time.Now()
	scaleFleet(b, ctx, cluster, down)
	waitDeployment(b, ctx, cluster, down, runTimeout)
	var why string
	err = wait.PollUntilContextTimeout(ctx, time.Second, consolidateTimeout, false, func(ctx context.Context) (bool, error) {
		var ok bool
		ok, why = consolidated(ctx, cluster, claims, down, settle)
		return ok, nil
	})
	if err != nil {
		fatalf(b, "waiting for the fleet to consolidate: %v; %s", err, why)
	}
	toConsolidated := max(0, claims.lastChange().Sub(scaledDown))
	elapsed := time.Since(began)
	pending := checkPods(b, ctx, cluster, down)
	violations := pdb.stop()
	if len(violations) > 0 {
		fatalf(b, "the PodDisruptionBudget was broken %d times, first: %s", len(violations), violations[0])
	}
	if pending > 0 {
		fatalf(b, "%d pods Pending at the end", pending)
	}

	total, bindings := proxy.total.Load(), proxy.get("POST pods/binding")
	phases := claims.phases(scaledDown, scaledDown.Add(toConsolidated))
	writes := proxy.perClaim()
	say("consolidated %.1f s after the scale-down: %d NodeClaims for %d pods (%d needed at %d a node); peak %d", toConsolidated.Seconds(), claims.count(), down, ceilDiv(down, fleetPodsPerNode), fleetPodsPerNode, claims.peak())
	say("consolidation: %.1f s with no command in flight (deciding), %.1f s with a node draining, %.1f s with nodes terminating only",
		phases.deciding.Seconds(), phases.draining.Seconds(), phases.terminating.Seconds())
	say("tailor-scheduler made %d requests in %.0f s (%d bindings); the most frequent: %s", total, elapsed.Seconds(), bindings, proxy.top(12))
	say("tailor-scheduler's requests per second by verb and resource: %s", proxy.rates(elapsed))
	say("per NodeClaim created: %.2f status writes, %.2f writes of the NodeClaim, %.2f Events", writes.status, writes.object, writes.events)
	say("stranded or unused-node events: %s", tailorEvents(ctx, cluster))
	say("Events by reporter, object and reason: %s", eventsByReason(ctx, cluster))
	say("the whole run: %s", wakeUps())
	b.ReportMetric(toConsolidated.Seconds(), "s-to-consolidated")
	b.ReportMetric(phases.deciding.Seconds(), "s-consolidation-deciding")
	b.ReportMetric(phases.draining.Seconds(), "s-consolidation-draining")
	b.ReportMetric(phases.terminating.Seconds(), "s-consolidation-terminating")
	b.ReportMetric(writes.status, "status-writes/nodeclaim")
	b.ReportMetric(writes.object, "writes/nodeclaim")
	b.ReportMetric(writes.events, "events/nodeclaim")
	b.ReportMetric(float64(procStatusKB("VmHWM"))/1024, "peak-rss-MB")
	b.ReportMetric(float64(heap.peak())/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(total)/elapsed.Seconds(), "sched-req/s")
	b.ReportMetric(float64(total-bindings)/elapsed.Seconds(), "sched-req/s-without-bindings")
	b.ReportMetric(float64(total-reqAtPeak)/(elapsed-toRunning).Seconds(), "sched-req/s-scale-down")
	b.ReportMetric(float64(claims.peak()), "nodes-peak")
	b.ReportMetric(float64(claims.count()), "nodes-end")
	b.ReportMetric(float64(claims.count())/float64(ceilDiv(down, fleetPodsPerNode)), "nodes-end/needed")
	b.ReportMetric(float64(pending), "pending-end")
	b.ReportMetric(float64(len(violations)), "pdb-violations")
}

// fleetGates turns off the ReplicaSet controller's check that its informers have seen its own
// last writes before it syncs again (StaleControllerConsistencyReplicaSet, beta and on since
// Kubernetes 1.36). Against an API server that shares two cores with the whole fleet, the pod
// informer trails by seconds, each refused sync puts the ReplicaSet back on its exponential
// backoff, and the controller took from 19 to 111 s to create 4,000 pods: the benchmark measured
// the sandbox's lag instead of Tailor. In a cluster the informer trails by milliseconds.
//
// It turns on SchedulerAsyncAPICalls (beta since Kubernetes 1.34, off by default) when
// TAILOR_SCALE_ASYNC_API is set: without it kube-scheduler writes each unschedulable pod's status
// in its scheduling loop, and no other pod is scheduled while the API server answers.
func fleetGates() map[string]bool {
	gates := map[string]bool{"StaleControllerConsistencyReplicaSet": false}
	if os.Getenv("TAILOR_SCALE_ASYNC_API") != "" {
		gates["SchedulerAsyncAPICalls"] = true
	}
	return gates
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// say prints a line of the run, prefixed so that make bench-scale keeps it beside the
// benchmark's figures.
func say(format string, args ...any) { fmt.Printf("fleetscale: "+format+"\n", args...) }

func fatalf(b *testing.B, format string, args ...any) {
	say("FAIL: "+format, args...)
	b.Fatalf(format, args...)
}

func scaleFleet(b *testing.B, ctx context.Context, cluster *sandbox.Cluster, replicas int) {
	// The Deployment controller writes the Deployment too (its status), hence the retry.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := cluster.Kube.AppsV1().Deployments("default").GetScale(ctx, "fleet", metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Replicas = int32(replicas)
		_, err = cluster.Kube.AppsV1().Deployments("default").UpdateScale(ctx, "fleet", s, metav1.UpdateOptions{})
		return err
	}); err != nil {
		fatalf(b, "scaling the Deployment to %d: %v", replicas, err)
	}
}

// waitDeployment waits until the Deployment has exactly replicas pods, all Ready. Its status is
// what the ReplicaSet controller counted from its pods: reading it is cheap where listing 20,000
// pods every second would load the API server the benchmark measures Tailor against.
func waitDeployment(b *testing.B, ctx context.Context, cluster *sandbox.Cluster, replicas int, timeout time.Duration) {
	var st appsv1.DeploymentStatus
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		d, err := cluster.Kube.AppsV1().Deployments("default").Get(ctx, "fleet", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		st = d.Status
		return d.Status.ObservedGeneration == d.Generation && int(st.Replicas) == replicas && int(st.ReadyReplicas) == replicas && int(st.UpdatedReplicas) == replicas, nil
	})
	if err != nil {
		pending := checkPods(b, ctx, cluster, replicas)
		fatalf(b, "waiting for %d pods Ready: %v; status %d replicas, %d ready; %d Pending", replicas, err, st.Replicas, st.ReadyReplicas, pending)
	}
}

// checkPods lists the Deployment's pods once and returns how many are Pending; it fails the
// benchmark if their number is not replicas.
func checkPods(b *testing.B, ctx context.Context, cluster *sandbox.Cluster, replicas int) int {
	list, err := cluster.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=fleet"})
	if err != nil {
		b.Fatal(err)
	}
	pending, live := 0, 0
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		live++
		if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName == "" {
			pending++
		}
	}
	if live != replicas {
		say("%d pods of the Deployment, want %d", live, replicas)
		b.Errorf("%d pods of the Deployment, want %d", live, replicas)
	}
	return pending
}

// consolidated says whether consolidation is done: every pod is in place, no NodeClaim is being
// deleted, no node is empty, and the NodeClaim count has held still for settle. Done is a fleet
// Tailor no longer shrinks; how close it is to the fewest nodes the pods need is reported apart
// (nodes-end/needed), since a fleet that stops above it is a finding, not a hang.
func consolidated(ctx context.Context, cluster *sandbox.Cluster, claims *claimWatch, replicas int, settle time.Duration) (bool, string) {
	if quiet := time.Since(claims.lastChange()); quiet < settle {
		return false, fmt.Sprintf("%d NodeClaims (%d being deleted), the last change %.0f s ago", claims.count(), claims.deleting(), quiet.Seconds())
	}
	if n := claims.deleting(); n > 0 {
		return false, fmt.Sprintf("%d of %d NodeClaims being deleted", n, claims.count())
	}
	pods, err := cluster.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	nodes, err := cluster.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	used, running := map[string]bool{}, 0
	for _, p := range pods.Items {
		used[p.Spec.NodeName] = true
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running++
		}
	}
	empty := 0
	for _, n := range nodes.Items {
		if !used[n.Name] {
			empty++
		}
	}
	return running == replicas && empty == 0, fmt.Sprintf("%d of %d pods Running, %d nodes, %d empty", running, len(pods.Items), len(nodes.Items), empty)
}
