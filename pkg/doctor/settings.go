package doctor

import (
	"context"
	"fmt"
	"path"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Settings are what the checks need to know of Tailor's install. Discover fills what is empty
// from Tailor's Deployment (its flags, its ServiceAccount); the CLI's flags set the rest.
type Settings struct {
	// Namespace and Deployment are where Tailor runs; empty when no Deployment was found.
	Namespace, Deployment string
	// ClusterName (--cluster-name) names the instance profiles Tailor manages.
	ClusterName string
	// Region (--aws-region) is the region Tailor runs in; empty: the SDK's default chain.
	Region string
	// InterruptionQueue (--interruption-queue) is the SQS queue's name; empty: none configured.
	InterruptionQueue string
	// Role is Tailor's own IAM role (name or ARN), from the ServiceAccount's
	// eks.amazonaws.com/role-arn (IRSA); Pod Identity keeps it outside the cluster.
	Role string
	// WebhookConfiguration is the MutatingWebhookConfiguration whose caBundle must sign the
	// serving certificate in WebhookSecret (in Namespace); empty WebhookSecret: not known.
	WebhookConfiguration, WebhookSecret string
	// LeaseNamespace/LeaseName is the leader-election Lease (the chart names it like the release).
	LeaseNamespace, LeaseName string
	// OptInLabel is the namespace label that opts a namespace in when the webhook configuration
	// is not there to say (docs/tasks/opt-in-by-namespace.md).
	OptInLabel string
}

// RoleARNAnnotation is the ServiceAccount annotation IRSA reads the role from.
const RoleARNAnnotation = "eks.amazonaws.com/role-arn"

// DefaultOptInLabel is the chart's webhook.namespaceSelector label.
const DefaultOptInLabel = "scheduling.tailor.sh/enabled"

// isTailor tells Tailor's Deployment: a container of the tailor-scheduler image, or one run with
// the AWS cloud and a cluster name, as the chart runs it.
func isTailor(d *appsv1.Deployment) bool {
	for _, c := range d.Spec.Template.Spec.Containers {
		image := c.Image
		if i := strings.IndexAny(image, "@"); i >= 0 {
			image = image[:i]
		}
		if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
			image = image[:i]
		}
		if path.Base(image) == "tailor-scheduler" {
			return true
		}
		if argValue(c.Args, "cloud") == "aws" && argValue(c.Args, "cluster-name") != "" {
			return true
		}
	}
	return false
}

// argValue reads --name=value or --name value from a container's arguments.
func argValue(args []string, name string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// Discover finds Tailor's Deployment (in namespace, or in any) and fills the settings it can
// from it. The install result says what was found, or that the checks run on flags alone.
func Discover(ctx context.Context, kube kubernetes.Interface, namespace string, s Settings) (Settings, Result) {
	list, err := kube.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, fail("install", "", "check the kubeconfig and that it may list Deployments", "listing Deployments: %v", err)
	}
	var found *appsv1.Deployment
	for i := range list.Items {
		if isTailor(&list.Items[i]) {
			found = &list.Items[i]
			break
		}
	}
	if found == nil {
		if s.Namespace == "" {
			s.Namespace = namespace
		}
		if s.OptInLabel == "" {
			s.OptInLabel = DefaultOptInLabel
		}
		return s, warn("install", "", "install the chart (docs/getting-started/install.md), or pass --interruption-queue, --role, --lease and --cluster-name",
			"no Tailor Deployment found; the checks use the flags alone")
	}
	s.Namespace, s.Deployment = found.Namespace, found.Name
	var c corev1.Container
	for _, c = range found.Spec.Template.Spec.Containers {
		if argValue(c.Args, "cluster-name") != "" {
			break
		}
	}
	fill := func(field *string, value string) {
		if *field == "" {
			*field = value
		}
	}
	fill(&s.ClusterName, argValue(c.Args, "cluster-name"))
	fill(&s.InterruptionQueue, argValue(c.Args, "interruption-queue"))
	fill(&s.Region, argValue(c.Args, "aws-region"))
	if argValue(c.Args, "webhook-port") != "0" {
		fill(&s.WebhookConfiguration, argValue(c.Args, "webhook-configuration"))
		if secret := argValue(c.Args, "webhook-cert-secret"); secret != "" {
			fill(&s.WebhookSecret, secret)
		} else if dir := argValue(c.Args, "webhook-cert-dir"); dir != "" {
			fill(&s.WebhookSecret, mountedSecret(found, c, dir))
		}
	}
	fill(&s.LeaseNamespace, found.Namespace)
	fill(&s.LeaseName, found.Name)
	fill(&s.OptInLabel, DefaultOptInLabel)
	if s.Role == "" {
		sa := found.Spec.Template.Spec.ServiceAccountName
		if sa == "" {
			sa = "default"
		}
		if got, err := kube.CoreV1().ServiceAccounts(found.Namespace).Get(ctx, sa, metav1.GetOptions{}); err == nil {
			s.Role = got.Annotations[RoleARNAnnotation]
		}
	}
	ready := found.Status.ReadyReplicas
	want := int32(1)
	if found.Spec.Replicas != nil {
		want = *found.Spec.Replicas
	}
	r := ok("install", "Deployment "+found.Namespace+"/"+found.Name, "%d/%d replicas ready, cluster %q, interruption queue %q",
		ready, want, s.ClusterName, s.InterruptionQueue)
	if ready == 0 && want > 0 {
		r = warn("install", r.Object, fmt.Sprintf("kubectl -n %s describe deployment %s", found.Namespace, found.Name),
			"no replica is ready (of %d)", want)
	}
	return s, r
}

// mountedSecret is the Secret mounted at dir in the container (cert-manager's certificate).
func mountedSecret(d *appsv1.Deployment, c corev1.Container, dir string) string {
	for _, m := range c.VolumeMounts {
		if path.Clean(m.MountPath) != path.Clean(dir) {
			continue
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				return v.Secret.SecretName
			}
		}
	}
	return ""
}
