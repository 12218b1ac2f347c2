package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/tailor-sh/tailor/manifests"
	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/aws/resolve"
	"github.com/tailor-sh/tailor/pkg/doctor"
	"github.com/tailor-sh/tailor/pkg/generated/clientset/versioned"
	"github.com/tailor-sh/tailor/pkg/sandbox"
)

const (
	doctorQueue = "tailor-interruptions"
	doctorRole  = "tailor-controller"
)

// doctorWorld is a correct install: a cluster (a real API server with Tailor's CRDs) and an
// emulated account set up as the docs say.
type doctorWorld struct {
	kubeconfig string
	emu        *emulator.Emulator
	kube       kubernetes.Interface
	tailor     versioned.Interface
	ext        apiextensionsclient.Interface
	caPEM      []byte
}

// TestDoctor: against a correctly set up cluster and account `tailor doctor` reports no failure
// and exits 0; each misconfiguration, made one at a time and then undone, fails with its own
// message (and only its own check fails), and the command exits non-zero.
func TestDoctor(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane; skipped in -short mode")
	}
	ctx := context.Background()
	w := startDoctorWorld(ctx, t)

	results, err := w.doctor(ctx, t)
	if err != nil {
		t.Fatalf("a correct install: %v\n%s", err, render(results))
	}
	t.Logf("a correct install:\n%s", render(results))
	for _, check := range []string{"install", "node-role", "subnets", "security-groups", "amis", "interruption-queue", "interruption-policy",
		"interruption-rules", "iam-policy", "crds", "karpenter", "webhook-cert", "webhook-cabundle", "lease", "opted-in-pods"} {
		if !hasStatus(results, check, doctor.OK) {
			t.Errorf("no ok line of check %s", check)
		}
	}

	for _, tc := range []struct {
		name  string
		check string
		want  string
		// breakIt makes the misconfiguration and returns what undoes it.
		breakIt func(t *testing.T) func()
	}{
		{"missing subnet tag", "subnets", "spec.subnetSelectorTerms[0].tags karpenter.sh/discovery=tailor match no subnet", func(t *testing.T) func() {
			subnets := w.emu.Subnets()
			for _, s := range subnets {
				w.emu.SetSubnetTags(s.ID, map[string]string{"Name": s.Tags["Name"]})
			}
			return func() {
				for _, s := range subnets {
					w.emu.SetSubnetTags(s.ID, s.Tags)
				}
			}
		}},
		{"no instance profile", "node-role", "spec.instanceProfile missing-profile does not exist in IAM", func(t *testing.T) func() {
			nc := doctorNodeClass("by-profile")
			nc.Spec.Role, nc.Spec.InstanceProfile = "", ptr.To("missing-profile")
			if _, err := w.tailor.AWSV1().EC2NodeClasses().Create(ctx, nc, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			return func() { _ = w.tailor.AWSV1().EC2NodeClasses().Delete(ctx, nc.Name, metav1.DeleteOptions{}) }
		}},
		{"queue without rules", "interruption-rules", "no enabled EventBridge rule sends spot interruption notices", func(t *testing.T) func() {
			for _, r := range w.emu.Rules() {
				w.emu.DeleteRule(r.Name)
			}
			return func() { w.emu.SetUpInterruptionQueue(doctorQueue) }
		}},
		{"queue policy without EventBridge", "interruption-policy", "does not let events.amazonaws.com send to it", func(t *testing.T) func() {
			w.emu.SetQueuePolicy(doctorQueue, strings.ReplaceAll(w.emu.QueuePolicy(doctorQueue), `"events.amazonaws.com",`, ""))
			return func() { w.emu.SetQueuePolicy(doctorQueue, w.emu.QueuePolicy(doctorQueue)) }
		}},
		{"missing IAM action", "iam-policy", "do not allow 1 action(s) of manifests/aws/iam-policy.json: iam:PassRole", func(t *testing.T) func() {
			w.emu.PutRolePolicy(doctorRole, "tailor", withoutAction(t, manifests.IAMPolicy, "iam:PassRole"))
			return func() { w.emu.PutRolePolicy(doctorRole, "tailor", string(manifests.IAMPolicy)) }
		}},
		{"stale CRD", "crds", "CRD nodepools.karpenter.sh", func(t *testing.T) func() {
			crds := w.ext.ApiextensionsV1().CustomResourceDefinitions()
			crd, err := crds.Get(ctx, "nodepools.karpenter.sh", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			versions := crd.DeepCopy().Spec.Versions
			delete(crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties, "weight")
			if _, err := crds.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			return func() {
				crd, err := crds.Get(ctx, "nodepools.karpenter.sh", metav1.GetOptions{})
				if err == nil {
					crd.Spec.Versions = versions
					_, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"Karpenter controller present", "karpenter", "Karpenter's controller is running", func(t *testing.T) func() {
			create(ctx, t, w.kube, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "karpenter"}})
			d := deployment("karpenter", "karpenter", "karpenter/controller:1.6.0", nil, "")
			if _, err := w.kube.AppsV1().Deployments("karpenter").Create(ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			return func() { _ = w.kube.AppsV1().Deployments("karpenter").Delete(ctx, "karpenter", metav1.DeleteOptions{}) }
		}},
		{"wrong caBundle", "webhook-cabundle", "the caBundle does not verify the serving certificate in Secret tailor/tailor-webhook-cert", func(t *testing.T) func() {
			other, _, _ := newCA(t)
			setCABundle(ctx, t, w.kube, other)
			return func() { setCABundle(ctx, t, w.kube, w.caPEM) }
		}},
		{"opted-in pod with another scheduler", "opted-in-pods", `1 opted-in pod(s) name scheduler "my-scheduler"`, func(t *testing.T) func() {
			p := pod("shop", "elsewhere", "my-scheduler")
			if _, err := w.kube.CoreV1().Pods("shop").Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			return func() {
				_ = w.kube.CoreV1().Pods("shop").Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			}
		}},
		{"expired Lease", "lease", "held by tailor-7d9f-abcde but not renewed", func(t *testing.T) func() {
			setLeaseRenewed(ctx, t, w.kube, time.Now().Add(-time.Hour))
			return func() { setLeaseRenewed(ctx, t, w.kube, time.Now()) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			undo := tc.breakIt(t)
			results, err := w.doctor(ctx, t)
			undo()
			if err == nil {
				t.Fatalf("tailor doctor passed:\n%s", render(results))
			}
			found := false
			for _, r := range results {
				if r.Status != doctor.Fail {
					continue
				}
				if r.Check != tc.check {
					t.Errorf("check %s failed too: %s", r.Check, r.Message)
				}
				if r.Fix == "" {
					t.Errorf("failure without what to do: %+v", r)
				}
				found = found || strings.Contains(r.Object+": "+r.Message, tc.want)
				t.Logf("%s: %s -> %s", r.Object, r.Message, r.Fix)
			}
			if !found {
				t.Errorf("no failure of %s says %q:\n%s", tc.check, tc.want, render(results))
			}
		})
	}
	// Every misconfiguration undone, the install passes again.
	if results, err := w.doctor(ctx, t); err != nil {
		t.Errorf("after undoing every misconfiguration: %v\n%s", err, render(results))
	}
}

func (w *doctorWorld) doctor(ctx context.Context, t *testing.T) ([]doctor.Result, error) {
	t.Helper()
	var out bytes.Buffer
	err := runDoctor(ctx, &out, &doctorFlags{kubeconfig: w.kubeconfig, output: "json", endpoint: w.emu.URL(), region: w.emu.Region(), timeout: time.Minute})
	var report struct {
		Results  []doctor.Result `json:"results"`
		Failures int             `json:"failures"`
	}
	if jerr := json.Unmarshal(out.Bytes(), &report); jerr != nil {
		t.Fatalf("-o json is not JSON: %v (%v)\n%s", jerr, err, out.String())
	}
	if (report.Failures > 0) != (err != nil) {
		t.Errorf("%d failures, error %v", report.Failures, err)
	}
	return report.Results, err
}

func render(results []doctor.Result) string {
	var b bytes.Buffer
	_ = doctor.Write(&b, results)
	return b.String()
}

func hasStatus(results []doctor.Result, check string, status doctor.Status) bool {
	for _, r := range results {
		if r.Check == check && r.Status == status {
			return true
		}
	}
	return false
}

func startDoctorWorld(ctx context.Context, t *testing.T) *doctorWorld {
	dir := t.TempDir()
	cp, err := sandbox.StartControlPlane(t, filepath.Join(dir, "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	if err := sandbox.InstallCRDs(ctx, cp.Config); err != nil {
		t.Fatal(err)
	}
	w := &doctorWorld{kubeconfig: filepath.Join(dir, "kubeconfig")}
	if err := sandbox.WriteKubeconfig(cp.Config, w.kubeconfig); err != nil {
		t.Fatal(err)
	}
	w.kube = kubernetes.NewForConfigOrDie(cp.Config)
	jsonConfig := rest.CopyConfig(cp.Config)
	jsonConfig.ContentType = "application/json"
	w.tailor = versioned.NewForConfigOrDie(jsonConfig)
	w.ext = apiextensionsclient.NewForConfigOrDie(cp.Config)

	// The account: subnets, security group, node role and AMIs are seeded; the interruption queue
	// with its policy and rules, Tailor's role with the documented policy, and the node role's
	// instance profile (which Tailor would have created) are added.
	w.emu = emulator.Start(emulator.Options{ClusterName: "tailor"})
	t.Cleanup(w.emu.Close)
	w.emu.SetUpInterruptionQueue(doctorQueue)
	w.emu.PutRolePolicy(doctorRole, "tailor", string(manifests.IAMPolicy))
	nodeRole := emulator.NodeRoleName("tailor")
	w.emu.AddInstanceProfile(resolve.InstanceProfileName("tailor", w.emu.Region(), nodeRole), nodeRole)

	// The cluster: Tailor's Deployment as the chart renders it, its ServiceAccount (IRSA), Lease,
	// webhook Secret and configuration; an EC2NodeClass; an opted-in namespace with Tailor's pod.
	for _, ns := range []string{"tailor", "shop"} {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if ns == "shop" {
			n.Labels = map[string]string{doctor.DefaultOptInLabel: "true"}
		}
		create(ctx, t, w.kube, n)
	}
	create(ctx, t, w.kube, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "tailor", Name: "tailor",
		Annotations: map[string]string{doctor.RoleARNAnnotation: "arn:aws:iam::" + emulator.AccountID + ":role/" + doctorRole}}})
	d := deployment("tailor", "tailor", "tailor-scheduler:v0.1.0", []string{"--config=/etc/tailor/config/scheduler-config.yaml", "--cloud=aws",
		"--cluster-name=tailor", "--cluster-endpoint=https://example.invalid", "--interruption-queue=" + doctorQueue,
		"--webhook-port=9443", "--webhook-service=tailor", "--webhook-namespace=tailor", "--webhook-configuration=tailor",
		"--webhook-cert-secret=tailor-webhook-cert"}, "tailor")
	d, err = w.kube.AppsV1().Deployments("tailor").Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: 2}
	if _, err := w.kube.AppsV1().Deployments("tailor").UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	create(ctx, t, w.kube, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "tailor", Name: "tailor"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("tailor-7d9f-abcde"), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: &metav1.MicroTime{Time: time.Now()}}})
	caPEM, ca, caKey := newCA(t)
	w.caPEM = caPEM
	certPEM := servingCert(t, ca, caKey, "tailor.tailor.svc")
	create(ctx, t, w.kube, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "tailor", Name: "tailor-webhook-cert"},
		Data: map[string][]byte{"ca.crt": caPEM, corev1.TLSCertKey: certPEM}})
	create(ctx, t, w.kube, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "tailor"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "pods.scheduling.tailor.sh",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: caPEM,
				Service: &admissionregistrationv1.ServiceReference{Namespace: "tailor", Name: "tailor", Path: ptr.To("/mutate-pods"), Port: ptr.To[int32](443)}},
			// The API server calls it for the test's pods, finds no Service and, failurePolicy
			// Ignore, creates them unchanged.
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{doctor.DefaultOptInLabel: "true"}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}}})
	if _, err := w.tailor.AWSV1().EC2NodeClasses().Create(ctx, doctorNodeClass("default"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.kube.CoreV1().Pods("shop").Create(ctx, pod("shop", "web", "tailor"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return w
}

func doctorNodeClass(name string) *awsv1.EC2NodeClass {
	discovery := map[string]string{emulator.DiscoveryTag: "tailor"}
	return &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: awsv1.EC2NodeClassSpec{
		Role:                       emulator.NodeRoleName("tailor"),
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: discovery}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: discovery}},
		AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
	}}
}

func create(ctx context.Context, t *testing.T, kube kubernetes.Interface, obj any) {
	t.Helper()
	var err error
	switch o := obj.(type) {
	case *corev1.Namespace:
		_, err = kube.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
	case *corev1.ServiceAccount:
		_, err = kube.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *corev1.Secret:
		_, err = kube.CoreV1().Secrets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *coordinationv1.Lease:
		_, err = kube.CoordinationV1().Leases(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		_, err = kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, o, metav1.CreateOptions{})
	default:
		t.Fatalf("create: %T", obj)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func deployment(ns, name, image string, args []string, serviceAccount string) *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				ServiceAccountName: serviceAccount, Containers: []corev1.Container{{Name: name, Image: image, Args: args}}}}}}
}

func pod(ns, name, scheduler string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{SchedulerName: scheduler,
		Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
}

func setCABundle(ctx context.Context, t *testing.T, kube kubernetes.Interface, caPEM []byte) {
	t.Helper()
	mwcs := kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	mwc, err := mwcs.Get(ctx, "tailor", metav1.GetOptions{})
	if err == nil {
		mwc.Webhooks[0].ClientConfig.CABundle = caPEM
		_, err = mwcs.Update(ctx, mwc, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

func setLeaseRenewed(ctx context.Context, t *testing.T, kube kubernetes.Interface, at time.Time) {
	t.Helper()
	leases := kube.CoordinationV1().Leases("tailor")
	lease, err := leases.Get(ctx, "tailor", metav1.GetOptions{})
	if err == nil {
		lease.Spec.RenewTime = &metav1.MicroTime{Time: at}
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// withoutAction is the policy with one action taken out of every statement (and a statement
// left with none dropped).
func withoutAction(t *testing.T, policy []byte, action string) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(policy, &doc); err != nil {
		t.Fatal(err)
	}
	var kept []any
	for _, st := range doc["Statement"].([]any) {
		st := st.(map[string]any)
		var actions []any
		switch a := st["Action"].(type) {
		case string:
			actions = []any{a}
		case []any:
			actions = a
		}
		var left []any
		for _, a := range actions {
			if a != action {
				left = append(left, a)
			}
		}
		if len(left) > 0 {
			st["Action"] = left
			kept = append(kept, st)
		}
	}
	doc["Statement"] = kept
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func newCA(t *testing.T) ([]byte, *x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tailor-webhook-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(365 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), ca, key
}

func servingCert(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, dnsName string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(90 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestDoctorRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		flags doctorFlags
		want  string
	}{
		{doctorFlags{output: "yaml"}, "the only format is json"},
		{doctorFlags{lease: "tailor"}, "want NAMESPACE/NAME"},
	} {
		if err := runDoctor(context.Background(), &bytes.Buffer{}, &tc.flags); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.flags, err, tc.want)
		}
	}
}
