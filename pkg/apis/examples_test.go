package apis_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// decodeStrict decodes YAML into a typed object and fails on any field the type does not have,
// so an example with a typo (or a field Tailor lacks) cannot pass.
func decodeStrict(t *testing.T, doc string, into interface{}) {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
		t.Fatal(err)
	}
}

// Every file in examples/ decodes strictly into its Go type, is admitted by its CRD, and loses no
// field to pruning.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("want at least nodepool, ec2nodeclass and inflate examples, found %v", files)
	}
	adm := admitters(t)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(data, &tm); err != nil {
				t.Fatal(err)
			}
			switch tm.GroupVersionKind() {
			case karpv1.SchemeGroupVersion.WithKind("NodePool"):
				np := &karpv1.NodePool{}
				decodeStrict(t, string(data), np)
				if np.Spec.Disruption.ConsolidateAfter.String() != "1m0s" || len(np.Spec.Disruption.Budgets) != 2 {
					t.Errorf("disruption: %+v", np.Spec.Disruption)
				}
			case awsv1.SchemeGroupVersion.WithKind("EC2NodeClass"):
				nc := &awsv1.EC2NodeClass{}
				decodeStrict(t, string(data), nc)
				if nc.AMIFamily() != awsv1.AMIFamilyAL2023 {
					t.Errorf("AMIFamily() = %s", nc.AMIFamily())
				}
			case appsv1.SchemeGroupVersion.WithKind("Deployment"):
				d := &appsv1.Deployment{}
				decodeStrict(t, string(data), d)
				if d.Spec.Template.Spec.SchedulerName != "tailor" {
					t.Errorf("schedulerName = %q", d.Spec.Template.Spec.SchedulerName)
				}
				for _, c := range d.Spec.Template.Spec.Containers {
					if strings.Contains(c.Image, "/") {
						t.Errorf("image %q names a registry; examples use bare image names", c.Image)
					}
				}
				return
			default:
				t.Fatalf("unexpected kind %v", tm.GroupVersionKind())
			}
			a := adm[tm.Kind]
			obj := fromYAML(t, string(data))
			if pruned := a.unknownFields(obj); len(pruned) > 0 {
				t.Fatalf("fields unknown to the CRD: %v", pruned)
			}
			if errs := a.admit(obj, nil); len(errs) > 0 {
				t.Fatalf("refused by the CRD: %v", errs.ToAggregate())
			}
		})
	}
}
