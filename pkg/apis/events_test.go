package apis_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"

	"github.com/tailor-sh/tailor/pkg/apis"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
)

// A recorder built on client-go's scheme, as kube-scheduler's is, must write an Event that
// names the NodeClaim it is about, though that scheme does not know Tailor's types.
func TestAnEventAboutANodeClaimNamesIt(t *testing.T) {
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "default-x7k2p", UID: "0f3c", ResourceVersion: "42", Labels: map[string]string{"team": "a"}},
		Spec:       karpv1.NodeClaimSpec{Taints: []corev1.Taint{{Key: "example.com/dedicated", Effect: corev1.TaintEffectNoSchedule}}},
	}
	kube := fake.NewClientset()
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: kube.EventsV1()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(clientgoscheme.Scheme, "tailor")

	recorder.Eventf(apis.ForEvents(claim), nil, corev1.EventTypeNormal, "Launched", "Status", "launched")
	var got []eventsv1.Event
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := kube.EventsV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		got = list.Items
		return len(got) > 0, nil
	})
	if err != nil {
		t.Fatalf("no Event was written: %v", err)
	}
	want := corev1.ObjectReference{Kind: "NodeClaim", APIVersion: "karpenter.sh/v1", Name: claim.Name, UID: claim.UID, ResourceVersion: "42"}
	if got[0].Regarding != want {
		t.Errorf("the Event is regarding %+v, want %+v", got[0].Regarding, want)
	}
	if claim.Kind != "" {
		t.Errorf("ForEvents changed the claim it was given: kind %q", claim.Kind)
	}
}
