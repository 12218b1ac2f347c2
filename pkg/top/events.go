package top

import (
	"regexp"
	"sort"
	"strconv"
	"time"

	eventsv1 "k8s.io/api/events/v1"
)

// podReasonRank orders what can be said about a pending pod: Tailor's own word (a plan found no
// room, or the pod was stranded) is more telling than the scheduler's, which for a pod waiting
// on new capacity only says that no node fits yet.
var podReasonRank = map[string]int{"FailedScheduling": 1, "FailedProvisioning": 2, "Stranded": 2}

type reason struct {
	Reason, Note string
	at           time.Time
}

// podReasons is, per namespace/name, the latest Event of the highest rank about each pod.
func podReasons(events []*eventsv1.Event) map[string]reason {
	out := map[string]reason{}
	for _, ev := range events {
		rank := podReasonRank[ev.Reason]
		if rank == 0 || ev.Regarding.Kind != "Pod" {
			continue
		}
		key := ev.Regarding.Namespace + "/" + ev.Regarding.Name
		at := eventTime(ev)
		have, ok := out[key]
		if ok && (podReasonRank[have.Reason] > rank || podReasonRank[have.Reason] == rank && have.at.After(at)) {
			continue
		}
		out[key] = reason{Reason: ev.Reason, Note: ev.Note, at: at}
	}
	return out
}

// decisionReasons are the Events Tailor writes on a NodeClaim when it removes it outside the
// Disrupt action: the disruption loop's decisions it had to undo, and capacity given back because
// no pod needed it.
// Disrupting is what the loop wrote before it took Karpenter's DisruptionTerminating; a cluster
// that ran an older Tailor may still hold such Events.
var decisionReasons = map[string]bool{"DisruptionTerminating": true, "Disrupting": true, "DisruptionFailed": true, "Disrupted": true, "Unneeded": true}

// disruptAction is the action of every Event Tailor writes on a NodeClaim it removes: the
// disruption loop's and the forceful path's (TerminatingOnInterruption, Expired, Unhealthy, ...), whose
// reasons name the cause.
const disruptAction = "Disrupt"

// sameDecision is how far apart the Events of one decision may be: they are written one claim
// after the other as the claims are deleted.
const sameDecision = 5 * time.Second

var savesPattern = regexp.MustCompile(`(saves|costs) \$([0-9]+(?:\.[0-9]+)?)/h`)

// decisions folds the claims' Events into decisions, latest first, at most limit. The loop writes
// the same message on every claim of a decision, and its savings are the decision's, so the
// claims are grouped rather than their savings summed.
func decisions(events []*eventsv1.Event, limit int) []Decision {
	var evs []*eventsv1.Event
	for _, ev := range events {
		if (decisionReasons[ev.Reason] || ev.Action == disruptAction) && ev.Regarding.Kind == "NodeClaim" {
			evs = append(evs, ev)
		}
	}
	sort.Slice(evs, func(i, j int) bool { return eventTime(evs[i]).After(eventTime(evs[j])) })
	out := []Decision{}
	for _, ev := range evs {
		at := eventTime(ev)
		if n := len(out); n > 0 && out[n-1].Message == ev.Note && out[n-1].Reason == ev.Reason && out[n-1].Time.Sub(at) <= sameDecision {
			out[n-1].NodeClaims = append(out[n-1].NodeClaims, ev.Regarding.Name)
			continue
		}
		if len(out) == limit {
			break
		}
		d := Decision{Time: at, Reason: ev.Reason, Message: ev.Note, NodeClaims: []string{ev.Regarding.Name}}
		if m := savesPattern.FindStringSubmatch(ev.Note); m != nil {
			d.SavingsPerHour, _ = strconv.ParseFloat(m[2], 64)
			if m[1] == "costs" {
				d.SavingsPerHour = -d.SavingsPerHour
			}
		}
		out = append(out, d)
	}
	for i := range out {
		sort.Strings(out[i].NodeClaims)
	}
	return out
}

// eventTime is when an Event last happened, from whichever field its writer filled.
func eventTime(ev *eventsv1.Event) time.Time {
	switch {
	case ev.Series != nil && !ev.Series.LastObservedTime.IsZero():
		return ev.Series.LastObservedTime.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	case !ev.DeprecatedLastTimestamp.IsZero():
		return ev.DeprecatedLastTimestamp.Time
	}
	return ev.CreationTimestamp.Time
}
