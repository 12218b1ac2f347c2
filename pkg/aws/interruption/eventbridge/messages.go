// Package eventbridge reads and writes the EventBridge notices EC2 and AWS Health send about
// instances (spot interruption warnings, rebalance recommendations, scheduled changes, state
// changes, capacity reservation interruptions). It imports nothing beyond the standard library
// and a UUID helper, so its fuzz target builds in seconds (make test explores it); the queue
// that delivers the notices is the interruption package's.
package eventbridge

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Kind is what happened to an instance.
type Kind string

// Kinds of events, named after the EventBridge notices they come from.
const (
	// KindSpotInterruption: EC2 reclaims the spot instance about two minutes after the notice.
	KindSpotInterruption Kind = "SpotInterruption"
	// KindRebalanceRecommendation: the spot instance is at elevated risk of interruption.
	KindRebalanceRecommendation Kind = "RebalanceRecommendation"
	// KindScheduledChange: AWS Health scheduled maintenance or retirement of the instance.
	KindScheduledChange Kind = "ScheduledChange"
	// KindInstanceStopping: the instance is stopping or stopped.
	KindInstanceStopping Kind = "InstanceStopping"
	// KindInstanceTerminating: the instance is shutting down or terminated.
	KindInstanceTerminating Kind = "InstanceTerminating"
	// KindCapacityReservationInterruption: the reservation the instance runs in is reclaimed.
	KindCapacityReservationInterruption Kind = "CapacityReservationInterruption"
)

// spotNoticePeriod is how long after a spot interruption warning EC2 acts.
const spotNoticePeriod = 2 * time.Minute

// Event is one instance's part of a notice.
type Event struct {
	Kind       Kind
	InstanceID string
	// Time is when EventBridge emitted the notice.
	Time time.Time
	// Deadline is when the instance is expected to go away or be disrupted; zero when the
	// notice sets none (rebalance recommendations).
	Deadline time.Time
	// MessageID is the EventBridge event ID, for logs.
	MessageID string
}

// envelope is the EventBridge event, as delivered in the SQS message body.
type envelope struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Time       time.Time       `json:"time"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

type instanceDetail struct {
	InstanceID     string `json:"instance-id"`
	InstanceAction string `json:"instance-action"`
	State          string `json:"state"`
}

type healthDetail struct {
	Service           string `json:"service"`
	EventTypeCategory string `json:"eventTypeCategory"`
	StartTime         string `json:"startTime"`
	AffectedEntities  []struct {
		EntityValue string `json:"entityValue"`
	} `json:"affectedEntities"`
}

// Parse reads one message body. It returns the events to handle, none for a well-formed notice
// Tailor does not act on (another source, a Health event for another service, a state such as
// "running"), and an error for a body that is not a notice it can read.
func Parse(body string) ([]Event, error) {
	var env envelope
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		return nil, fmt.Errorf("not an EventBridge event: %w", err)
	}
	if env.Version != "0" || env.Source == "" || env.DetailType == "" {
		return nil, fmt.Errorf("not an EventBridge event: version %q, source %q, detail-type %q", env.Version, env.Source, env.DetailType)
	}
	base := Event{Time: env.Time, MessageID: env.ID}
	switch env.Source + "/" + env.DetailType {
	case "aws.ec2/EC2 Spot Instance Interruption Warning":
		return instanceEvent(env, base, KindSpotInterruption, env.Time.Add(spotNoticePeriod))
	case "aws.ec2/EC2 Instance Rebalance Recommendation":
		return instanceEvent(env, base, KindRebalanceRecommendation, time.Time{})
	case "aws.ec2/EC2 Capacity Reservation Instance Interruption Warning":
		return instanceEvent(env, base, KindCapacityReservationInterruption, env.Time.Add(spotNoticePeriod))
	case "aws.ec2/EC2 Instance State-change Notification":
		var d instanceDetail
		if err := json.Unmarshal(env.Detail, &d); err != nil {
			return nil, fmt.Errorf("%s %s: detail: %w", env.DetailType, env.ID, err)
		}
		switch d.State {
		case "stopping", "stopped":
			return instanceEvent(env, base, KindInstanceStopping, env.Time)
		case "shutting-down", "terminated":
			return instanceEvent(env, base, KindInstanceTerminating, env.Time)
		}
		return nil, nil
	case "aws.health/AWS Health Event":
		return healthEvents(env, base)
	}
	return nil, nil
}

func instanceEvent(env envelope, base Event, kind Kind, deadline time.Time) ([]Event, error) {
	var d instanceDetail
	if err := json.Unmarshal(env.Detail, &d); err != nil {
		return nil, fmt.Errorf("%s %s: detail: %w", env.DetailType, env.ID, err)
	}
	if !strings.HasPrefix(d.InstanceID, "i-") {
		return nil, fmt.Errorf("%s %s: detail.instance-id %q is not an instance ID", env.DetailType, env.ID, d.InstanceID)
	}
	base.Kind, base.InstanceID, base.Deadline = kind, d.InstanceID, deadline
	return []Event{base}, nil
}

// healthEvents reads EC2 scheduled changes, one event per affected instance.
func healthEvents(env envelope, base Event) ([]Event, error) {
	var d healthDetail
	if err := json.Unmarshal(env.Detail, &d); err != nil {
		return nil, fmt.Errorf("%s %s: detail: %w", env.DetailType, env.ID, err)
	}
	if d.Service != "EC2" || d.EventTypeCategory != "scheduledChange" {
		return nil, nil
	}
	deadline, err := time.Parse(time.RFC1123, d.StartTime)
	if err != nil {
		return nil, fmt.Errorf("%s %s: detail.startTime %q: %w", env.DetailType, env.ID, d.StartTime, err)
	}
	var out []Event
	for _, e := range d.AffectedEntities {
		if !strings.HasPrefix(e.EntityValue, "i-") {
			continue
		}
		ev := base
		ev.Kind, ev.InstanceID, ev.Deadline = KindScheduledChange, e.EntityValue, deadline.UTC()
		out = append(out, ev)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s %s: no affected instance", env.DetailType, env.ID)
	}
	return out, nil
}
