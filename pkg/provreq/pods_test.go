package provreq

import (
	"testing"
	"time"

	autoscalingv1 "github.com/tailor-sh/tailor/pkg/apis/autoscaling/v1"
)

// TestPodsOfARequest: count pods per pod set, shaped as the template, in the request's namespace,
// annotated as their consumers will be, with UIDs the same in every plan and distinct across sets.
func TestPodsOfARequest(t *testing.T) {
	w := newWorld(t)
	w.addTemplate("main", "2")
	w.addTemplate("side", "1")
	w.addRequest("job", atomic, "main", 3)
	obj, _, _ := w.requests.GetByKey("team/job")
	req := obj.(*autoscalingv1.ProvisioningRequest)
	req.Spec.PodSets = append(req.Spec.PodSets, autoscalingv1.PodSet{PodTemplateRef: autoscalingv1.Reference{Name: "side"}, Count: 2})
	pods, err := podsOf(req, w.c.opts.Templates, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	again, _ := podsOf(req, w.c.opts.Templates, time.Now())
	seen := map[string]bool{}
	for i, p := range pods {
		if p.Namespace != "team" || p.Annotations[autoscalingv1.ConsumeAnnotationKey] != "job" || p.Annotations[autoscalingv1.ClassAnnotationKey] != atomic {
			t.Errorf("%s: namespace %s, annotations %v", p.Name, p.Namespace, p.Annotations)
		}
		if seen[string(p.UID)] || again[i].UID != p.UID {
			t.Errorf("%s: UID %s repeated or not stable", p.Name, p.UID)
		}
		seen[string(p.UID)] = true
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "ProvisioningRequest" || p.OwnerReferences[0].UID != req.UID {
			t.Errorf("%s: owners %v", p.Name, p.OwnerReferences)
		}
	}
	if len(pods) != 5 || pods[0].Labels["job"] != "main" || pods[4].Labels["job"] != "side" {
		t.Fatalf("got %d pods, first %v, last %v", len(pods), pods[0].Labels, pods[len(pods)-1].Labels)
	}
	if _, ok := pods[0].Annotations[autoscalingv1.ConsumeAnnotationKey]; ok {
		if tmpl, _ := w.c.opts.Templates.PodTemplates("team").Get("main"); len(tmpl.Template.Annotations) != 0 {
			t.Fatal("building pods wrote into the template")
		}
	}
}
