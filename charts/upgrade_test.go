package charts

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	kubefeatures "k8s.io/kubernetes/pkg/features"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/cloud/fake"
	"github.com/tailor-sh/tailor/pkg/cloud/fake/kubelet"
	"github.com/tailor-sh/tailor/pkg/sandbox"
)

// previousChart is the chart of the release before this one (testdata/previous/README.md).
const previousChart = "testdata/previous/tailor"

// releaseName and its namespace, as the install guide's `helm install tailor ... -n tailor`.
const releaseName = "tailor"

// observeFor is how long the fleet is watched once the new leader runs: longer than the
// disruption loop's poll (disruptionPollInterval, 10 s in the chart), so that a drift or
// consolidation decision the new version would take on the old fleet shows in time.
const observeFor = 12 * time.Second

// upgradeTest is one run: the sandbox, Helm's client, the release's replicas and the Service
// in front of their webhooks.
type upgradeTest struct {
	t       *testing.T
	ctx     context.Context
	cluster *sandbox.Cluster
	helm    *action.Configuration
	front   *frontDoor
	running *tailorProcess
	// transitions is the Lease's leaseTransitions when the running replica took it.
	transitions int32
}

// A release of the previous chart runs Tailor and a fleet; `helm upgrade` to this chart (its
// CRDs applied first, as the install guide says), then `helm rollback`, each followed by a
// rolling replacement of Tailor's replica, relaunch nothing, disrupt no pod, leave the webhook
// answering every call, and hand the leader election Lease to the new replica.
//
// What is not the real thing, and why: the sandbox runs no containers, so the release's
// Deployment is applied and rolled by Helm but its pods stay Pending; each Tailor replica runs in
// this process from what the release put in the API server (the ConfigMap's
// KubeSchedulerConfiguration and the Deployment's webhook flags), in the order a rolling update
// with maxSurge 1 runs them. Both replicas are this build's code: the test is of the chart, its
// values, CRDs, Lease, webhook and Helm's upgrade and rollback, not of an older binary. The
// webhook is reached by URL through a post-renderer, since the sandbox has no Service proxy; the
// front door plays the Service.
func TestHelmUpgradeAndRollbackKeepTheFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane; skipped in -short mode")
	}
	// The release sets no --feature-gates: the in-process replicas run with the defaults.
	if utilfeature.DefaultFeatureGate.Enabled(kubefeatures.GenericWorkload) {
		t.Fatal("feature gate GenericWorkload is on in this process: a test before this one set it and did not put it back (keepFeatureGates)")
	}
	u := startUpgradeTest(t)
	previous, err := loader.Load(previousChart)
	if err != nil {
		t.Fatal(err)
	}
	current, err := Chart()
	if err != nil {
		t.Fatal(err)
	}
	if previous.Metadata.Version == current.Metadata.Version || previous.Metadata.AppVersion == current.Metadata.AppVersion {
		t.Fatalf("the previous chart is %s (app %s), the same as this one", previous.Metadata.Version, previous.Metadata.AppVersion)
	}
	ext := apiextensionsclient.NewForConfigOrDie(u.cluster.Config)
	// The cluster as the previous release left it: its CRDs applied as the guide says.
	applyCRDs(u.ctx, t, ext, previous, true)
	u.install(previous, values(t, required))
	u.running = u.rollTo(previous.Metadata.AppVersion)
	startFleet(u.ctx, t, u.cluster, 6)
	before, err := readFleet(u.ctx, u.cluster)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the fleet: %d NodeClaims, %d nodes, %d pods", len(before.claims), len(before.nodes), len(before.pods))

	// The upgrade, with a value only this chart knows.
	u.step("upgrade", before, func() {
		applyCRDs(u.ctx, t, ext, current, false)
		u.upgrade(current, values(t, required+"  pluginArgs:\n    gangCompletionTimeout: 2m\n"))
		u.expectConfig("gangCompletionTimeout: 2m", true)
		u.running = u.rollTo(current.Metadata.AppVersion)
	})
	// The rollback: the previous revision's chart and values; the CRDs stay this release's.
	u.step("rollback", before, func() {
		rb := action.NewRollback(u.helm)
		rb.WaitStrategy = kube.HookOnlyStrategy
		if err := rb.Run(releaseName); err != nil {
			t.Fatalf("helm rollback: %v", err)
		}
		u.expectConfig("gangCompletionTimeout", false)
		u.running = u.rollTo(previous.Metadata.AppVersion)
	})
	u.expectHistory(previous)
	// The replica that leads now does a leader's work: two more pods get a node.
	scale(u.ctx, t, u.cluster, 8)
}

func startUpgradeTest(t *testing.T) *upgradeTest {
	t.Helper()
	ctx := klog.NewContext(t.Context(), klog.Background())
	cluster, err := sandbox.Start(ctx, t, sandbox.Options{
		Dir: t.TempDir(), Clock: clock.RealClock{}, NoScheduler: true,
		NewCloud: func(kube kubernetes.Interface) cloud.CloudProvider {
			return fake.New(fake.Options{ClusterName: "prod-east", Joiner: &kubelet.Joiner{Client: kube}})
		},
	})
	if err != nil {
		t.Fatalf("starting the sandbox: %v", err)
	}
	u := &upgradeTest{t: t, ctx: ctx, cluster: cluster, helm: helmFor(t, cluster.Kubeconfig, releaseName), front: openFrontDoor(t)}
	t.Cleanup(func() {
		if u.running != nil {
			u.running.stop(t)
		}
		cluster.Stop()
	})
	return u
}

// step runs change (a Helm action and the roll of Tailor's replica that follows it) while the
// webhook is probed, watches the fleet for observeFor, and checks that nothing of it changed.
func (u *upgradeTest) step(name string, before *fleet, change func()) {
	u.t.Helper()
	probe := startWebhookProbe(u.ctx, u.cluster)
	change()
	time.Sleep(observeFor)
	probe.stop(u.t, name)
	after, err := readFleet(u.ctx, u.cluster)
	if err != nil {
		u.t.Fatal(err)
	}
	sameFleet(u.t, name, before, after)
	noDisruptionEvents(u.ctx, u.t, u.cluster, name)
}

func (u *upgradeTest) install(chrt *chart.Chart, vals map[string]any) {
	u.t.Helper()
	in := action.NewInstall(u.helm)
	in.ReleaseName, in.Namespace, in.CreateNamespace = releaseName, releaseName, true
	in.WaitStrategy = kube.HookOnlyStrategy
	in.PostRenderer = webhookAt{url: u.front.url()}
	if _, err := in.RunWithContext(u.ctx, chrt, vals); err != nil {
		u.t.Fatalf("helm install %s: %v", chrt.Metadata.Version, err)
	}
}

func (u *upgradeTest) upgrade(chrt *chart.Chart, vals map[string]any) {
	u.t.Helper()
	up := action.NewUpgrade(u.helm)
	up.Namespace = releaseName
	up.WaitStrategy = kube.HookOnlyStrategy
	up.PostRenderer = webhookAt{url: u.front.url()}
	if _, err := up.RunWithContext(u.ctx, releaseName, chrt, vals); err != nil {
		u.t.Fatalf("helm upgrade to %s: %v", chrt.Metadata.Version, err)
	}
}

// rollTo replaces the running replica (if any) by one of the release as it now stands, as the
// Deployment's rolling update does: the new pod starts and its webhook joins the Service, the old
// one leaves the Service and stops, releasing the Lease, which the new one takes.
func (u *upgradeTest) rollTo(appVersion string) *tailorProcess {
	u.t.Helper()
	u.expectImageTag(appVersion)
	next := startTailor(u.ctx, u.t, u.cluster, releaseName, "tailor-"+appVersion)
	waitFor(u.ctx, u.t, "the webhook of "+next.name+" to serve", 30*time.Second, func() (bool, string) {
		return servesTLS(u.ctx, u.cluster.Kube, releaseName, releaseName+"-webhook-cert", next.addr)
	})
	old := u.running
	if old == nil {
		u.front.set(next.addr)
	} else {
		// Both serve for a while, as both pods are ready endpoints; then the old one leaves.
		u.front.set(old.addr, next.addr)
		time.Sleep(time.Second)
		u.front.set(next.addr)
		old.stop(u.t)
	}
	var transitions int32
	waitFor(u.ctx, u.t, next.name+" to hold the Lease", 30*time.Second, func() (bool, string) {
		l, err := u.cluster.Kube.CoordinationV1().Leases(releaseName).Get(u.ctx, releaseName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if l.Spec.LeaseTransitions != nil {
			transitions = *l.Spec.LeaseTransitions
		}
		return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == next.name, "held by " + ptrString(l.Spec.HolderIdentity)
	})
	u.t.Logf("%s holds Lease %s/%s (%d transitions)", next.name, releaseName, releaseName, transitions)
	if old != nil && transitions != u.transitions+1 {
		u.t.Errorf("Lease %s/%s: %d transitions after %s took it from %s, %d before; want one more", releaseName, releaseName, transitions, next.name, old.name, u.transitions)
	}
	u.transitions = transitions
	return next
}

func ptrString(s *string) string {
	if s == nil {
		return "no one"
	}
	return *s
}

// expectImageTag checks that the release's Deployment runs the image of appVersion: the chart's
// default tag follows the release.
func (u *upgradeTest) expectImageTag(appVersion string) {
	u.t.Helper()
	d, err := u.cluster.Kube.AppsV1().Deployments(releaseName).Get(u.ctx, releaseName, metav1.GetOptions{})
	if err != nil {
		u.t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":"+appVersion) {
		u.t.Errorf("Deployment %s/%s runs %s; want the tag %s", d.Namespace, d.Name, img, appVersion)
	}
}

// expectConfig says whether the release's scheduler configuration holds text.
func (u *upgradeTest) expectConfig(text string, want bool) {
	u.t.Helper()
	cm, err := u.cluster.Kube.CoreV1().ConfigMaps(releaseName).Get(u.ctx, releaseName+"-config", metav1.GetOptions{})
	if err != nil {
		u.t.Fatal(err)
	}
	if got := strings.Contains(cm.Data["scheduler-config.yaml"], text); got != want {
		u.t.Errorf("ConfigMap %s/%s holds %q: %t; want %t", cm.Namespace, cm.Name, text, got, want)
	}
}

// expectHistory checks Helm's record, the Secrets it keeps: three revisions, the last deployed,
// and the Deployment labelled with the chart of the rollback's target.
func (u *upgradeTest) expectHistory(previous *chart.Chart) {
	u.t.Helper()
	secrets, err := u.cluster.Kube.CoreV1().Secrets(releaseName).List(u.ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + releaseName})
	if err != nil {
		u.t.Fatal(err)
	}
	status := map[string]string{}
	for _, s := range secrets.Items {
		status[s.Labels["version"]] = s.Labels["status"]
	}
	if want := map[string]string{"1": "superseded", "2": "superseded", "3": "deployed"}; !maps.Equal(status, want) {
		u.t.Errorf("Helm's release Secrets, revision to status: %v; want %v", status, want)
	}
	d, err := u.cluster.Kube.AppsV1().Deployments(releaseName).Get(u.ctx, releaseName, metav1.GetOptions{})
	if err != nil {
		u.t.Fatal(err)
	}
	if got, want := d.Labels["helm.sh/chart"], "tailor-"+previous.Metadata.Version; got != want {
		u.t.Errorf("Deployment %s/%s: helm.sh/chart %q after the rollback; want %q", d.Namespace, d.Name, got, want)
	}
}

func values(t *testing.T, text string) map[string]any {
	t.Helper()
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(text), &vals); err != nil {
		t.Fatal(err)
	}
	return vals
}
