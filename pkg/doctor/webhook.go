package doctor

import (
	"context"
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	certutil "k8s.io/client-go/util/cert"
)

// The webhook: its configuration's caBundle, and the serving certificate that bundle must sign;
// then the pods of opted-in namespaces that name another scheduler anyway.

// SchedulerName is the profile Tailor's plugin runs in, which the webhook sets on opted-in pods.
const SchedulerName = "tailor"

// expiresSoon is when a certificate's coming end is worth a warning: Tailor renews its own at
// two thirds of their lifetime (months ahead), so one this close means renewal is not happening.
const expiresSoon = 7 * 24 * time.Hour

func (e *Env) webhookConfiguration(ctx context.Context) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	if e.Settings.WebhookConfiguration == "" {
		return nil, nil
	}
	return e.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, e.Settings.WebhookConfiguration, metav1.GetOptions{})
}

func checkWebhook(ctx context.Context, env *Env) []Result {
	const check = "webhook"
	if env.Settings.WebhookConfiguration == "" {
		return []Result{warn(check, "", "pass --webhook-configuration if Tailor serves its webhook", "not checked: the webhook is off or no Tailor Deployment was found")}
	}
	obj := "MutatingWebhookConfiguration " + env.Settings.WebhookConfiguration
	mwc, err := env.webhookConfiguration(ctx)
	if apierrors.IsNotFound(err) {
		return []Result{fail(check, obj, "install the chart with webhook.enabled (helm upgrade), or run Tailor with --webhook-port=0",
			"does not exist: no pod is opted in by namespace")}
	}
	if err != nil {
		return []Result{fail(check, obj, "check that the kubeconfig may read MutatingWebhookConfigurations", "reading it: %v", err)}
	}
	var serving *x509.Certificate
	var out []Result
	secretObj := ""
	if name := env.Settings.WebhookSecret; name != "" {
		secretObj = "Secret " + env.Settings.Namespace + "/" + name
		var r Result
		serving, r = servingCertificate(ctx, env, secretObj)
		out = append(out, r)
	}
	for _, w := range mwc.Webhooks {
		out = append(out, caBundle(env, obj, w, serving, secretObj))
	}
	return out
}

// servingCertificate reads tls.crt of the webhook's Secret and judges its validity.
func servingCertificate(ctx context.Context, env *Env, obj string) (*x509.Certificate, Result) {
	const check = "webhook-cert"
	secret, err := env.Kube.CoreV1().Secrets(env.Settings.Namespace).Get(ctx, env.Settings.WebhookSecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fail(check, obj, "Tailor creates it when it starts (or cert-manager issues it): check Tailor's logs", "does not exist: the webhook has no certificate to serve")
	}
	if err != nil {
		return nil, fail(check, obj, "check that the kubeconfig may read Secrets in "+env.Settings.Namespace, "reading it: %v", err)
	}
	certs, err := certutil.ParseCertsPEM(secret.Data[corev1.TLSCertKey])
	if err != nil || len(certs) == 0 {
		return nil, fail(check, obj, "delete the Secret: Tailor issues a new certificate", "tls.crt does not hold a certificate: %v", err)
	}
	cert, now := certs[0], env.now()
	switch {
	case now.After(cert.NotAfter):
		return cert, fail(check, obj, "delete the Secret: Tailor issues a new certificate (cert-manager: check the Certificate)", "the serving certificate expired %s", cert.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(cert.NotBefore):
		return cert, fail(check, obj, "check the clocks of the nodes", "the serving certificate is not valid before %s", cert.NotBefore.UTC().Format(time.RFC3339))
	case cert.NotAfter.Sub(now) < expiresSoon:
		return cert, warn(check, obj, "check Tailor's logs for renewal errors", "the serving certificate expires %s", cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return cert, ok(check, obj, "serving certificate for %s valid until %s", strings.Join(cert.DNSNames, ", "), cert.NotAfter.UTC().Format(time.RFC3339))
}

// caBundle: the webhook's caBundle holds CAs, and they sign the serving certificate for the
// webhook's Service name.
func caBundle(env *Env, obj string, w admissionregistrationv1.MutatingWebhook, serving *x509.Certificate, secretObj string) Result {
	const check = "webhook-cabundle"
	fix := "Tailor writes its CA into the caBundle while it runs (it needs patch on the configuration); with cert-manager, its CA injector does: check its logs"
	what := fmt.Sprintf("webhook %s", w.Name)
	if len(w.ClientConfig.CABundle) == 0 {
		return fail(check, obj, fix, "%s has an empty caBundle: the API server cannot call it, and pods are created without Tailor", what)
	}
	cas, err := certutil.ParseCertsPEM(w.ClientConfig.CABundle)
	if err != nil {
		return fail(check, obj, fix, "%s: the caBundle does not parse: %v", what, err)
	}
	if serving == nil {
		return ok(check, obj, "%s trusts %d CA(s); the serving certificate was not read", what, len(cas))
	}
	roots := x509.NewCertPool()
	for _, ca := range cas {
		roots.AddCert(ca)
	}
	opts := x509.VerifyOptions{Roots: roots, CurrentTime: env.now()}
	if s := w.ClientConfig.Service; s != nil {
		opts.DNSName = s.Name + "." + s.Namespace + ".svc"
	}
	if _, err := serving.Verify(opts); err != nil {
		return fail(check, obj, fix, "%s: the caBundle does not verify the serving certificate in %s: %v", what, secretObj, err)
	}
	return ok(check, obj, "%s: the caBundle verifies the serving certificate in %s", what, secretObj)
}

// checkOptedInPods finds pods of opted-in namespaces that name another scheduler: the webhook
// leaves them alone, and Tailor launches nothing for them.
func checkOptedInPods(ctx context.Context, env *Env) []Result {
	const check = "opted-in-pods"
	selector := labels.SelectorFromSet(labels.Set{env.Settings.OptInLabel: "true"})
	objectSelector := labels.Everything()
	if env.Settings.OptInLabel == "" {
		selector = labels.SelectorFromSet(labels.Set{DefaultOptInLabel: "true"})
	}
	if mwc, err := env.webhookConfiguration(ctx); err == nil && mwc != nil {
		for _, w := range mwc.Webhooks {
			if w.NamespaceSelector != nil {
				if s, err := metav1.LabelSelectorAsSelector(w.NamespaceSelector); err == nil {
					selector = s
				}
			}
			if w.ObjectSelector != nil {
				if s, err := metav1.LabelSelectorAsSelector(w.ObjectSelector); err == nil {
					objectSelector = s
				}
			}
		}
	}
	namespaces, err := env.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return []Result{fail(check, "", "check that the kubeconfig may list Namespaces", "listing namespaces: %v", err)}
	}
	var out []Result
	opted := 0
	for _, ns := range namespaces.Items {
		if ns.Name == metav1.NamespaceSystem || ns.Name == env.Settings.Namespace {
			continue
		}
		opted++
		pods, err := env.Kube.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
		if err != nil {
			out = append(out, fail(check, "Namespace "+ns.Name, "check that the kubeconfig may list Pods", "listing pods: %v", err))
			continue
		}
		other := map[string][]string{}
		var schedulers []string
		for _, p := range pods.Items {
			if p.Spec.SchedulerName == SchedulerName || ownedByDaemonSet(&p) || !objectSelector.Matches(labels.Set(p.Labels)) ||
				p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			if len(other[p.Spec.SchedulerName]) == 0 {
				schedulers = append(schedulers, p.Spec.SchedulerName)
			}
			other[p.Spec.SchedulerName] = append(other[p.Spec.SchedulerName], p.Name)
		}
		for _, s := range schedulers {
			names := other[s]
			obj := "Namespace " + ns.Name
			if s == corev1.DefaultSchedulerName {
				out = append(out, warn(check, obj, "delete them (or roll their Deployments) while Tailor's webhook answers",
					"%d pod(s) went to %s, created while the webhook did not answer or before the namespace opted in: %s", len(names), s, firstFew(names)))
				continue
			}
			out = append(out, fail(check, obj, fmt.Sprintf("remove spec.schedulerName %q from their templates (the webhook sets %q), or take the namespace out of %s", s, SchedulerName, selector),
				"%d opted-in pod(s) name scheduler %q, so Tailor launches nothing for them: %s", len(names), s, firstFew(names)))
		}
	}
	if len(out) == 0 {
		out = append(out, ok(check, "", "every pod of the %d opted-in namespace(s) (%s) is Tailor's", opted, selector))
	}
	return out
}

func ownedByDaemonSet(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}
