package charts

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/operator"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	tailorwebhook "github.com/tailor-sh/tailor/pkg/webhook"
)

// helmFor is Helm's action configuration for releases in namespace, stored as Secrets there
// (Helm's default driver), through the sandbox's kubeconfig, as the helm CLI builds it.
func helmFor(t *testing.T, kubeconfig, namespace string) *action.Configuration {
	t.Helper()
	// Helm names its field manager after the program, and so does client-go: in this test
	// binary both Helm and the in-process Tailor would be "charts.test", and a rollback, which
	// folds its manager's Update entries into its own applied fields, would take the webhook's
	// caBundle that Tailor wrote as Helm's and drop it. In a cluster they are "helm" and
	// "tailor-scheduler".
	kube.ManagedFieldsManager = "helm"
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &kubeconfig, &namespace
	cfg := action.NewConfiguration()
	if err := cfg.Init(flags, namespace, "secret"); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// webhookAt is a Helm post-renderer (`helm --post-renderer`) that points every webhook of the
// chart's MutatingWebhookConfiguration at url instead of the chart's Service. The sandbox runs no
// Service proxy: its API server reaches a webhook on loopback, by URL. Nothing else is changed,
// and the release stores what was applied, so a rollback applies the same address.
type webhookAt struct{ url string }

func (p webhookAt) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	out := &bytes.Buffer{}
	dec := utilyaml.NewYAMLOrJSONDecoder(in, 4096)
	for {
		obj := map[string]any{}
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		if len(obj) == 0 {
			continue
		}
		if obj["kind"] == "MutatingWebhookConfiguration" {
			hooks, _ := obj["webhooks"].([]any)
			for _, h := range hooks {
				h.(map[string]any)["clientConfig"] = map[string]any{"url": p.url}
			}
		}
		data, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(data)
	}
}

// applyCRDs is `kubectl apply --server-side -f crds/` of chrt (the README's upgrade step):
// server-side apply under kubectl's field manager; force takes the fields over from whoever
// created the CRDs (the sandbox), as a cluster's first install would own them.
func applyCRDs(ctx context.Context, t *testing.T, ext apiextensionsclient.Interface, chrt *chart.Chart, force bool) {
	t.Helper()
	for _, f := range chrt.CRDObjects() {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(f.File.Data, crd); err != nil {
			t.Fatalf("%s: %v", f.Filename, err)
		}
		crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		data, err := yaml.Marshal(crd)
		if err != nil {
			t.Fatal(err)
		}
		json, err := yaml.YAMLToJSON(data)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, crd.Name, types.ApplyPatchType, json,
			metav1.PatchOptions{FieldManager: "kubectl", Force: &force}); err != nil {
			t.Fatalf("kubectl apply --server-side %s: %v", f.Filename, err)
		}
	}
}

// tailorProcess is one tailor-scheduler pod of a release, run in this process: the
// KubeSchedulerConfiguration the release's ConfigMap holds and the webhook flags of its
// Deployment, as the pod would read them, with two changes a pod would not need: the API server
// is reached through the sandbox's kubeconfig, and the webhook listens on a loopback port of its
// own behind the test's front door (the Service).
type tailorProcess struct {
	name   string
	addr   string // the webhook's address
	cancel context.CancelFunc
	done   chan error
}

// startTailor starts a replica named name of the release as it is stored now in the API server.
func startTailor(ctx context.Context, t *testing.T, c *sandbox.Cluster, release, name string) *tailorProcess {
	t.Helper()
	cm, err := c.Kube.CoreV1().ConfigMaps(release).Get(ctx, release+"-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{}
	if err := yaml.Unmarshal([]byte(cm.Data["scheduler-config.yaml"]), &cfg); err != nil {
		t.Fatalf("ConfigMap %s/%s: scheduler-config.yaml: %v", cm.Namespace, cm.Name, err)
	}
	conn, _ := cfg["clientConnection"].(map[string]any)
	if conn == nil {
		conn = map[string]any{}
	}
	conn["kubeconfig"] = c.Kubeconfig
	cfg["clientConnection"] = conn
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "scheduler-config.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	opts := options.NewOptions()
	opts.ConfigFile = path
	opts.SecureServing.BindPort = 0

	hook := webhookFlags(ctx, t, c.Kube, release)
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	hook.Port, hook.BindAddress, hook.ExtraHosts = port, "127.0.0.1", append(hook.ExtraHosts, "127.0.0.1")
	p := &tailorProcess{name: name, addr: fmt.Sprintf("127.0.0.1:%d", port), done: make(chan error, 1)}
	runCtx, cancel := context.WithCancel(ctx)
	p.cancel = cancel
	useCloud := func(kubernetes.Interface) (cloud.CloudProvider, error) { return c.Cloud, nil }
	go func() {
		p.done <- operator.Run(runCtx, opts, useCloud, clock.RealClock{}, operator.WithReplicaInProcess(name), operator.WithWebhook(hook))
	}()
	return p
}

// webhookFlags reads the webhook flags of the release's Deployment, as tailor-scheduler parses
// them (the other flags are the pod's and are ignored here).
func webhookFlags(ctx context.Context, t *testing.T, kube kubernetes.Interface, release string) tailorwebhook.Options {
	t.Helper()
	d, err := kube.AppsV1().Deployments(release).Get(ctx, release, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := tailorwebhook.Options{}
	fs := pflag.NewFlagSet("tailor-scheduler", pflag.ContinueOnError)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	o.AddFlags(fs)
	if err := fs.Parse(d.Spec.Template.Spec.Containers[0].Args); err != nil {
		t.Fatalf("Deployment %s/%s: args: %v", d.Namespace, d.Name, err)
	}
	if o.CertSecret == "" {
		t.Fatalf("Deployment %s/%s runs no webhook with a Secret of its own: args %q", d.Namespace, d.Name, d.Spec.Template.Spec.Containers[0].Args)
	}
	return o
}

// stop ends the replica as the kubelet's SIGTERM does (the Lease is released, the webhook
// drains) and waits for it.
func (p *tailorProcess) stop(t *testing.T) {
	t.Helper()
	p.cancel()
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("Tailor %s: %v", p.name, err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("Tailor %s did not stop within 30 s", p.name)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// frontDoor plays the chart's Service: it passes each connection (TLS is not terminated, so the
// API server checks the replica's own certificate) to one of the replicas now behind it, as a
// Service's ready endpoints. A replica leaves before it stops, as a terminating pod leaves its
// Service's endpoints.
type frontDoor struct {
	l    net.Listener
	mu   sync.Mutex
	back []string
	next int
}

func openFrontDoor(t *testing.T) *frontDoor {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &frontDoor{l: l}
	t.Cleanup(func() { _ = l.Close() })
	go f.serve()
	return f
}

func (f *frontDoor) url() string { return "https://" + f.l.Addr().String() + tailorwebhook.Path }

func (f *frontDoor) set(backends ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.back = backends
}

func (f *frontDoor) pick() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.back) == 0 {
		return ""
	}
	f.next++
	return f.back[f.next%len(f.back)]
}

func (f *frontDoor) serve() {
	for {
		in, err := f.l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer in.Close()
			to := f.pick()
			if to == "" {
				return
			}
			out, err := net.DialTimeout("tcp", to, time.Second)
			if err != nil {
				return
			}
			defer out.Close()
			go func() { _, _ = io.Copy(out, in) }()
			_, _ = io.Copy(in, out)
		}()
	}
}

// servesTLS says whether addr serves a certificate that the CA in the webhook's Secret signed,
// for 127.0.0.1: what the API server will check (the replica is ready).
func servesTLS(ctx context.Context, kube kubernetes.Interface, namespace, secret, addr string) (bool, string) {
	s, err := kube.CoreV1().Secrets(namespace).Get(ctx, secret, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.Data["ca.crt"]) {
		return false, "no CA in Secret " + namespace + "/" + secret
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
	if err != nil {
		return false, err.Error()
	}
	_ = conn.Close()
	return true, ""
}
