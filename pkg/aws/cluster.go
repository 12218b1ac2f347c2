package aws

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
)

// NodeClassesFromKube reads EC2NodeClasses from the API server through any clientset. The
// cloud is built from the scheduler's clientset alone (operator.NewCloudFunc), which has no typed
// client for Tailor's resources, so this asks for the JSON and decodes it. Once the operator's
// EC2NodeClass informer has synced, the provider reads its cache instead (nodeclasscache.go), and
// this is asked only for a class the cache does not hold yet.
func NodeClassesFromKube(kube kubernetes.Interface) NodeClassGetter {
	return func(ctx context.Context, name string) (*awsv1.EC2NodeClass, error) {
		raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/apis", awsv1.Group, "v1", "ec2nodeclasses", name).
			SetHeader("Accept", "application/json").DoRaw(ctx)
		if err != nil {
			return nil, err
		}
		nc := &awsv1.EC2NodeClass{}
		if err := json.Unmarshal(raw, nc); err != nil {
			return nil, fmt.Errorf("decoding EC2NodeClass %s: %w", name, err)
		}
		return nc, nil
	}
}

// ClusterDefaults fills, from the cluster itself, what the provider's user data needs and the
// caller did not set: the Kubernetes version (which EKS AMI aliases pick), the cluster DNS IP
// (the kube-dns Service, as EKS bootstraps it) and the cluster CA (the service account's, which
// is the API server's). None is fatal to miss. The API server endpoint is not guessed for real
// AWS: the scheduler reaches it through a Service IP that a booting node cannot; against the
// emulator, whose kubelets are played in-process, the scheduler's own URL will do.
func ClusterDefaults(ctx context.Context, kube kubernetes.Interface, o *Options) {
	if o.KubernetesVersion == "" {
		if info, err := kube.Discovery().ServerVersion(); err == nil {
			if v, err := version.ParseGeneric(info.GitVersion); err == nil {
				o.KubernetesVersion = fmt.Sprintf("%d.%d", v.Major(), v.Minor())
			}
		}
	}
	if len(o.ClusterDNS) == 0 {
		if svc, err := kube.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{}); err == nil && svc.Spec.ClusterIP != "" {
			o.ClusterDNS = []string{svc.Spec.ClusterIP}
		}
	}
	if o.ClusterCABundle == "" {
		if ca, err := os.ReadFile(serviceAccountCA); err == nil {
			o.ClusterCABundle = base64.StdEncoding.EncodeToString(ca)
		}
	}
	if o.ClusterEndpoint == "" && o.Endpoint != "" {
		if rc, ok := kube.CoreV1().RESTClient().(*rest.RESTClient); ok && rc != nil && rc.Get().URL() != nil {
			u := rc.Get().URL()
			o.ClusterEndpoint = u.Scheme + "://" + u.Host
		}
	}
}

const serviceAccountCA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
