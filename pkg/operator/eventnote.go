package operator

import (
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
)

// noteLimit is the most bytes the API server takes in an Event's note: it rejects a longer one,
// and the broadcaster does not retry. kube-scheduler cuts its FailedScheduling messages to it;
// Tailor's own notes (an Unconsolidatable that lists each of twenty NodePools' reasons, say) are
// cut here, for every recorder the operator hands out.
const noteLimit = 1024

// boundedNotes formats each note and cuts it to noteLimit, on a rune boundary, ending it with
// " ..." so that a reader sees it was cut.
type boundedNotes struct{ events.EventRecorderLogger }

func (b boundedNotes) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	if len(args) > 0 {
		note = fmt.Sprintf(note, args...)
	}
	b.EventRecorderLogger.Eventf(regarding, related, eventtype, reason, action, "%s", boundNote(note))
}

func (b boundedNotes) WithLogger(logger klog.Logger) events.EventRecorderLogger {
	return boundedNotes{b.EventRecorderLogger.WithLogger(logger)}
}

func boundNote(note string) string {
	if len(note) <= noteLimit {
		return note
	}
	const suffix = " ..."
	cut := noteLimit - len(suffix)
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut] + suffix
}
