package operator

import (
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
)

// A note over the API server's limit is cut to it on a rune boundary and says it was cut; a
// shorter one is written as formatted, a '%' in a formatted argument included.
func TestEventNotesAreCutToWhatTheAPIServerTakes(t *testing.T) {
	fake := events.NewFakeRecorder(4)
	recorder := boundedNotes{fake}.WithLogger(klog.Background())
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}
	// Twenty NodePools' reasons, each with a two-byte rune, as an Unconsolidatable lists them.
	var reasons []string
	for i := range 20 {
		reasons = append(reasons, strings.Repeat("é", 40)+" pool "+string(rune('a'+i)))
	}
	recorder.Eventf(pod, nil, corev1.EventTypeNormal, "Unconsolidatable", "Decide", "%s", strings.Join(reasons, "; "))
	recorder.Eventf(pod, nil, corev1.EventTypeNormal, "Nominated", "Nominate", "Pod should schedule on %s (%d%% full)", "node-a", 50)

	long := strings.TrimPrefix(<-fake.Events, "Normal Unconsolidatable ")
	if len(long) > noteLimit || !utf8.ValidString(long) || !strings.HasSuffix(long, " ...") || len(long) < noteLimit-4 {
		t.Errorf("the long note is %d bytes, valid UTF-8 %v, ending %q; want at most %d, valid, cut with \" ...\" at the limit",
			len(long), utf8.ValidString(long), long[max(0, len(long)-8):], noteLimit)
	}
	if short := <-fake.Events; short != "Normal Nominated Pod should schedule on node-a (50% full)" {
		t.Errorf("the short note reads %q", short)
	}
}
