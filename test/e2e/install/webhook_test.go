package install

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/tailor-sh/tailor/charts"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/webhook"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// optInLabel is the label the shipped MutatingWebhookConfiguration selects namespaces by.
const optInLabel = "scheduling.tailor.sh/enabled"

// podWebhookConfiguration is the MutatingWebhookConfiguration the Helm chart renders with its
// default values (new pods of namespaces labelled optInLabel=true, failurePolicy Ignore, no side
// effects), named name, with its webhook copied under each of webhookNames, each pointed at url:
// the sandbox's API server reaches the webhook on loopback, not through a Service.
func podWebhookConfiguration(t *testing.T, name, url string, webhookNames ...string) *admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	m, err := charts.Render("tailor", "tailor", map[string]any{"settings": map[string]any{
		"clusterName": "e2e", "clusterEndpoint": "https://e2e.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	var shipped admissionregistrationv1.MutatingWebhookConfiguration
	for _, o := range m.Objects {
		if o.GetKind() == "MutatingWebhookConfiguration" {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &shipped); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(shipped.Webhooks) != 1 {
		t.Fatalf("the chart's MutatingWebhookConfiguration: %d webhooks; want one", len(shipped.Webhooks))
	}
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, n := range webhookNames {
		w := *shipped.Webhooks[0].DeepCopy()
		w.Name, w.ClientConfig = n, admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url)}
		cfg.Webhooks = append(cfg.Webhooks, w)
	}
	return cfg
}

// Pods of a namespace labelled scheduling.tailor.sh/enabled=true are given schedulerName tailor
// by the webhook that tailor-scheduler serves (its certificate kept in a Secret, its CA put in the
// caBundle by Tailor), and Tailor launches nodes for them and schedules them there. Pods of other
// namespaces, and pods that name another scheduler, are left alone; with the webhook down, pods
// are still created.
func TestWebhookOptsInNamespacesByLabel(t *testing.T) {
	e := env.NewWithWebhook(t, webhook.Options{CertSecret: "tailor-webhook-cert", Service: "tailor-webhook", Namespace: "kube-system", Configuration: "tailor"})
	kube := e.Cluster.Kube
	for name, labels := range map[string]map[string]string{"shop": {optInLabel: "true"}, "legacy": nil} {
		if _, err := kube.CoreV1().Namespaces().Create(e.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(e.Ctx,
		podWebhookConfiguration(t, "tailor", e.Cluster.WebhookURL, "pods.scheduling.tailor.sh"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("Tailor to put its CA in the caBundle", 30*time.Second, func() (bool, string) {
		return caBundleIsSecrets(e.Ctx, kube, "tailor", "kube-system", "tailor-webhook-cert")
	})
	// The API server picks up a webhook configuration change through its own informer.
	e.WaitFor("the API server to call the webhook", 30*time.Second, func() (bool, string) {
		got, err := kube.CoreV1().Pods("shop").Create(e.Ctx, pausePod("probe", ""), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err.Error()
		}
		return got.Spec.SchedulerName == "tailor", "schedulerName " + got.Spec.SchedulerName
	})

	e.ApplyExample("ec2nodeclass.yaml")
	e.ApplyExample("nodepool.yaml")
	if _, err := kube.CoreV1().Pods("shop").Create(e.Ctx, pausePod("own-scheduler", "volcano"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for ns, name := range map[string]string{"legacy": "legacy-web", "shop": "shop-web"} {
		if _, err := kube.AppsV1().Deployments(ns).Create(e.Ctx, defaultSchedulerDeployment(ns, name, 3), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	pods := e.WaitRunning("app=shop-web", 3, 2*time.Minute)
	for _, p := range pods {
		if p.Spec.SchedulerName != "tailor" {
			t.Errorf("pod %s/%s: schedulerName %q; want tailor", p.Namespace, p.Name, p.Spec.SchedulerName)
		}
		node, err := kube.CoreV1().Nodes().Get(e.Ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if node.Labels[karpv1.NodePoolLabelKey] == "" {
			t.Errorf("pod %s runs on node %s, which Tailor did not launch", p.Name, node.Name)
		}
	}
	// By now Tailor has planned every pod it would take; the others are not its to place (the
	// sandbox runs no default scheduler, so they stay Pending).
	others, err := kube.CoreV1().Pods("").List(e.Ctx, metav1.ListOptions{LabelSelector: "app in (legacy-web, own-scheduler)"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"legacy-web": corev1.DefaultSchedulerName, "own-scheduler": "volcano"}
	if len(others.Items) != 4 {
		t.Fatalf("%d pods of legacy-web and own-scheduler; want 4", len(others.Items))
	}
	for _, p := range others.Items {
		if p.Spec.SchedulerName != want[p.Labels["app"]] || p.Spec.NodeName != "" {
			t.Errorf("pod %s/%s: schedulerName %q on node %q; want %q, unbound", p.Namespace, p.Name, p.Spec.SchedulerName, p.Spec.NodeName, want[p.Labels["app"]])
		}
		events, err := kube.CoreV1().Events(p.Namespace).List(e.Ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + p.Name})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events.Items {
			t.Errorf("pod %s/%s, not Tailor's: Event %s: %s", p.Namespace, p.Name, ev.Reason, ev.Message)
		}
	}

	// Tailor down (its webhook with it): failurePolicy Ignore lets pods be created, unchanged.
	e.Cluster.StopScheduler()
	got, err := kube.CoreV1().Pods("shop").Create(e.Ctx, pausePod("while-down", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a pod with the webhook down: %v", err)
	}
	if got.Spec.SchedulerName != corev1.DefaultSchedulerName {
		t.Fatalf("pod created with the webhook down: schedulerName %q; want %s", got.Spec.SchedulerName, corev1.DefaultSchedulerName)
	}
}

// caBundleIsSecrets says whether every webhook of the configuration trusts the CA in the Secret.
func caBundleIsSecrets(ctx context.Context, kube kubernetes.Interface, configuration, namespace, secret string) (bool, string) {
	s, err := kube.CoreV1().Secrets(namespace).Get(ctx, secret, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	cfg, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, configuration, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	if len(s.Data["ca.crt"]) == 0 {
		return false, "the Secret has no ca.crt"
	}
	for _, w := range cfg.Webhooks {
		if !bytes.Equal(w.ClientConfig.CABundle, s.Data["ca.crt"]) {
			return false, fmt.Sprintf("webhook %s: caBundle of %d bytes is not the Secret's ca.crt", w.Name, len(w.ClientConfig.CABundle))
		}
	}
	return true, ""
}

func pausePod(name, schedulerName string) *corev1.Pod {
	spec := env.PodSpec("100m", "64Mi")
	spec.SchedulerName = schedulerName
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}}, Spec: spec}
}

// defaultSchedulerDeployment is a Deployment whose pods name no scheduler, as most manifests do.
func defaultSchedulerDeployment(namespace, name string, replicas int32) *appsv1.Deployment {
	d := env.DeploymentOf(name, replicas, "1", "1Gi")
	d.Namespace = namespace
	d.Spec.Template.Spec.SchedulerName = ""
	return d
}
