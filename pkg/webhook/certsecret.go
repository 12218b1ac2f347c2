package webhook

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tailor-sh/tailor/pkg/controller"
)

// secretCertificates keeps a CA and a serving certificate in a Secret, serves the certificate,
// and puts the CA in the webhook configuration's caBundle. Every replica runs it: they agree
// through the API server, since a write based on a stale read fails (create: AlreadyExists,
// update: Conflict) and the loser reads the winner's Secret and serves that.
type secretCertificates struct {
	kube                           kubernetes.Interface
	clock                          clock.WithTicker
	namespace, name, configuration string
	hosts                          []string
	queue                          *controller.Queue
	current                        atomic.Pointer[tls.Certificate]
}

func newSecretCertificates(kube kubernetes.Interface, clk clock.WithTicker, o *Options) *secretCertificates {
	s := &secretCertificates{kube: kube, clock: clk, namespace: o.Namespace, name: o.CertSecret, configuration: o.Configuration, hosts: o.hosts()}
	s.queue = controller.NewQueue("webhook-certificates", clk, s.reconcile)
	return s
}

// Run watches the Secret and the webhook configuration, and reconciles on every change and when
// a certificate is due, until ctx ends.
func (s *secretCertificates) Run(ctx context.Context) {
	byName := func(name string) informers.SharedInformerOption {
		return informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		})
	}
	secrets := informers.NewSharedInformerFactoryWithOptions(s.kube, 0, informers.WithNamespace(s.namespace), byName(s.name))
	configs := informers.NewSharedInformerFactoryWithOptions(s.kube, 0, byName(s.configuration))
	enqueue := func(any) { s.queue.Add(s.name) }
	logger := klog.FromContext(ctx)
	if _, err := secrets.Core().V1().Secrets().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.serve(logger, obj); enqueue(obj) },
		UpdateFunc: func(_, obj any) { s.serve(logger, obj); enqueue(obj) },
		// The certificate last read stays served until the Secret is written again.
		DeleteFunc: enqueue,
	}); err != nil {
		logger.Error(err, "Watching the webhook's Secret")
	}
	if _, err := configs.Admissionregistration().V1().MutatingWebhookConfigurations().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		logger.Error(err, "Watching the MutatingWebhookConfiguration", "name", s.configuration)
	}
	secrets.Start(ctx.Done())
	configs.Start(ctx.Done())
	defer secrets.Shutdown()
	defer configs.Shutdown()
	s.queue.Add(s.name)
	s.queue.Run(ctx, 1)
}

// GetCertificate is a tls.Config.GetCertificate: the pair the Secret last held.
func (s *secretCertificates) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := s.current.Load(); c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("no webhook certificate yet: Secret %s/%s has none that parses", s.namespace, s.name)
}

func (s *secretCertificates) serve(logger klog.Logger, obj any) {
	secret, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	cert, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		// Reconcile issues a new pair; until then the last good one is served.
		logger.V(2).Info("The webhook's Secret holds no usable certificate yet", "secret", klog.KObj(secret), "err", err)
		return
	}
	s.current.Store(&cert)
}

// reconcile brings the Secret and the caBundle one step forward: a CA first (and the caBundle
// patched), then a serving certificate that CA signed, so a replica never serves a certificate the
// API server does not trust yet. It reads the Secret from the API server, not a cache, so a replica
// that lost a race sees the winner's write.
func (s *secretCertificates) reconcile(ctx context.Context, _ string) (time.Duration, error) {
	for range 3 {
		requeue, err := s.reconcileOnce(ctx)
		if !apierrors.IsAlreadyExists(err) && !apierrors.IsConflict(err) {
			return requeue, err
		}
		klog.FromContext(ctx).V(2).Info("Another replica wrote the webhook's Secret first; reading theirs", "secret", klog.KRef(s.namespace, s.name))
	}
	return 0, apierrors.NewConflict(corev1.Resource("secrets"), s.name, fmt.Errorf("written by another replica three times in a row"))
}

func (s *secretCertificates) reconcileOnce(ctx context.Context) (time.Duration, error) {
	now := s.clock.Now()
	secret, err := s.kube.CoreV1().Secrets(s.namespace).Get(ctx, s.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		secret = nil
	case err != nil:
		return 0, fmt.Errorf("reading the webhook's Secret %s/%s: %w", s.namespace, s.name, err)
	}
	var b bundle
	if secret != nil {
		b = readBundle(secret.Data)
	}
	next, why, err := renewCA(now, b)
	if err != nil {
		return 0, err
	}
	if why != "" {
		// With nothing servable, no caBundle has to catch up first.
		if !b.servable(now) {
			if next, _, err = renewServing(now, next, s.hosts); err != nil {
				return 0, err
			}
		}
		return 0, s.write(ctx, secret, next, why)
	}
	if err := s.trust(ctx, b); err != nil {
		return 0, err
	}
	next, why, err = renewServing(now, b, s.hosts)
	if err != nil {
		return 0, err
	}
	if why != "" {
		return 0, s.write(ctx, secret, next, why)
	}
	// Look again when something is due, and at least hourly in case the clock jumped.
	return min(max(b.nextRenewal().Sub(now), time.Second), time.Hour), nil
}

func (s *secretCertificates) write(ctx context.Context, secret *corev1.Secret, b bundle, why string) error {
	data, err := b.data()
	if err != nil {
		return err
	}
	if secret == nil {
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.namespace, Labels: map[string]string{"app.kubernetes.io/managed-by": "tailor"}},
			Type:       corev1.SecretTypeTLS,
			Data:       data,
		}
		_, err = s.kube.CoreV1().Secrets(s.namespace).Create(ctx, secret, metav1.CreateOptions{})
	} else {
		secret = secret.DeepCopy()
		secret.Data = data
		_, err = s.kube.CoreV1().Secrets(s.namespace).Update(ctx, secret, metav1.UpdateOptions{})
	}
	if err != nil {
		if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
			return err
		}
		return fmt.Errorf("writing the webhook's certificate to Secret %s/%s (Tailor needs get, create and update on it): %w", s.namespace, s.name, err)
	}
	klog.FromContext(ctx).Info("Wrote the webhook's certificates", "secret", klog.KObj(secret), "why", why, "servingExpires", b.cert.NotAfter.Format(time.RFC3339))
	return nil
}

// trust patches the caBundle of every webhook of the configuration that does not hold b's CAs.
// A configuration that does not exist yet is patched when it is created: its informer calls.
func (s *secretCertificates) trust(ctx context.Context, b bundle) error {
	mwcs := s.kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	cfg, err := mwcs.Get(ctx, s.configuration, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		klog.FromContext(ctx).V(2).Info("No MutatingWebhookConfiguration to put the webhook's CA in yet", "name", s.configuration)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", s.configuration, err)
	}
	type clientConfig struct {
		CABundle []byte `json:"caBundle"`
	}
	type webhook struct {
		Name         string       `json:"name"`
		ClientConfig clientConfig `json:"clientConfig"`
	}
	var stale []webhook
	for _, w := range cfg.Webhooks {
		if !b.trustedBy(w.ClientConfig.CABundle) {
			stale = append(stale, webhook{Name: w.Name, ClientConfig: clientConfig{CABundle: b.caPEM}})
		}
	}
	if len(stale) == 0 {
		return nil
	}
	// webhooks merge by name: the patch sets caBundle and leaves every other field to whoever
	// owns the configuration (Helm, kubectl).
	patch, err := json.Marshal(map[string]any{"webhooks": stale})
	if err != nil {
		return err
	}
	if _, err := mwcs.Patch(ctx, s.configuration, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("putting the webhook's CA in the caBundle of MutatingWebhookConfiguration %s (Tailor needs patch on it): %w", s.configuration, err)
	}
	klog.FromContext(ctx).Info("Put the webhook's CA in the caBundle", "mutatingWebhookConfiguration", s.configuration, "webhooks", len(stale))
	return nil
}
