package emulator

import (
	"fmt"
	"strconv"
	"time"
)

// Capacity reservation types and states, as EC2 names them.
const (
	ReservationTypeDefault       = "default"
	ReservationTypeCapacityBlock = "capacity-block"
	ReservationStateActive       = "active"
	ReservationStateCancelled    = "cancelled"
	ReservationStateExpired      = "expired"
	MatchCriteriaOpen            = "open"
	MatchCriteriaTargeted        = "targeted"
)

// CapacityReservation is an On-Demand Capacity Reservation or a Capacity Block. How many
// instances it still takes is not stored: it is Total minus the running instances launched into
// it, so launching uses one up and terminating (by Tailor, a test or the emulator) gives it back.
type CapacityReservation struct {
	ID, InstanceType, Zone string
	// Total is how many instances the reservation holds.
	Total int
	// OwnerID is the owning account; AccountID when empty.
	OwnerID string
	// Type is ReservationTypeDefault (when empty) or ReservationTypeCapacityBlock.
	Type string
	// MatchCriteria is MatchCriteriaOpen (when empty: any matching on-demand launch that does not
	// opt out uses it) or MatchCriteriaTargeted (only launches that name it).
	MatchCriteria string
	// State is ReservationStateActive when empty. A reservation whose EndTime has passed is
	// described as expired.
	State   string
	EndTime time.Time
	Tags    map[string]string
	// Available is filled in by CapacityReservations: Total minus the running instances in it.
	Available int
}

type capacityReservationXML struct {
	ID                     string   `xml:"capacityReservationId"`
	ARN                    string   `xml:"capacityReservationArn"`
	OwnerID                string   `xml:"ownerId"`
	InstanceType           string   `xml:"instanceType"`
	InstancePlatform       string   `xml:"instancePlatform"`
	AvailabilityZone       string   `xml:"availabilityZone"`
	Tenancy                string   `xml:"tenancy"`
	TotalInstanceCount     int      `xml:"totalInstanceCount"`
	AvailableInstanceCount int      `xml:"availableInstanceCount"`
	State                  string   `xml:"state"`
	InstanceMatchCriteria  string   `xml:"instanceMatchCriteria"`
	ReservationType        string   `xml:"reservationType"`
	EndDateType            string   `xml:"endDateType"`
	EndDate                string   `xml:"endDate,omitempty"`
	Tags                   []tagXML `xml:"tagSet>item"`
}

type describeCapacityReservationsOutput struct {
	ec2Output
	CapacityReservations []capacityReservationXML `xml:"capacityReservationSet>item"`
	NextToken            string                   `xml:"nextToken,omitempty"`
}

// AddCapacityReservation creates a reservation, filling in EC2's defaults, and returns its ID.
func (e *Emulator) AddCapacityReservation(r CapacityReservation) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r.ID == "" {
		r.ID = e.newID("cr")
	}
	if r.OwnerID == "" {
		r.OwnerID = AccountID
	}
	if r.Type == "" {
		r.Type = ReservationTypeDefault
	}
	if r.MatchCriteria == "" {
		r.MatchCriteria = MatchCriteriaOpen
	}
	if r.State == "" {
		r.State = ReservationStateActive
	}
	r.Tags = copyTags(r.Tags)
	e.world.reservations = append(e.world.reservations, &r)
	return r.ID
}

// CancelCapacityReservation cancels the reservation, as its owner can: it is described as
// cancelled, takes no launches, and its running instances go on running as plain on-demand ones.
func (e *Emulator) CancelCapacityReservation(id string) error {
	return e.setReservationState(id, ReservationStateCancelled)
}

// ExpireCapacityReservation ends the reservation now, as reaching its end date does.
func (e *Emulator) ExpireCapacityReservation(id string) error {
	return e.setReservationState(id, ReservationStateExpired)
}

func (e *Emulator) setReservationState(id, state string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.reservationLocked(id)
	if r == nil {
		return fmt.Errorf("no capacity reservation %s", id)
	}
	r.State = state
	return nil
}

// CapacityReservations returns copies of the reservations with their available counts.
func (e *Emulator) CapacityReservations() []CapacityReservation {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]CapacityReservation, 0, len(e.world.reservations))
	for _, r := range e.world.reservations {
		c := *r
		c.Tags = copyTags(r.Tags)
		c.State = e.reservationStateLocked(r)
		c.Available = e.reservationAvailableLocked(r)
		out = append(out, c)
	}
	return out
}

// reservationLocked returns the reservation or nil. Callers hold e.mu.
func (e *Emulator) reservationLocked(id string) *CapacityReservation {
	for _, r := range e.world.reservations {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// reservationStateLocked is the state as EC2 describes it: expired once the end time passed.
func (e *Emulator) reservationStateLocked(r *CapacityReservation) string {
	if r.State == ReservationStateActive && !r.EndTime.IsZero() && !e.clock.Now().Before(r.EndTime) {
		return ReservationStateExpired
	}
	return r.State
}

// reservationAvailableLocked is how many more instances the reservation takes.
func (e *Emulator) reservationAvailableLocked(r *CapacityReservation) int {
	n := r.Total
	for _, i := range e.world.instances {
		if i.CapacityReservationID == r.ID && i.State != "terminated" {
			n--
		}
	}
	return max(n, 0)
}

func (e *Emulator) describeCapacityReservations(q query) (ec2Response, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	items, err := byIDs(q, "CapacityReservationId", e.world.reservations, func(r *CapacityReservation) string { return r.ID },
		"InvalidCapacityReservationId.NotFound")
	if err != nil {
		return nil, err
	}
	items, err = filterSlice(items, parseFilters(q), func(r *CapacityReservation) attributes {
		return func(name string) ([]string, bool) {
			switch name {
			case "instance-type":
				return []string{r.InstanceType}, true
			case "availability-zone":
				return []string{r.Zone}, true
			case "owner-id":
				return []string{r.OwnerID}, true
			case "state":
				return []string{e.reservationStateLocked(r)}, true
			case "instance-match-criteria":
				return []string{r.MatchCriteria}, true
			}
			return tagAttributes(r.Tags, name)
		}
	})
	if err != nil {
		return nil, err
	}
	items, next, err := pageOf(e, q, items, 0)
	if err != nil {
		return nil, err
	}
	out := &describeCapacityReservationsOutput{NextToken: next}
	for _, r := range items {
		x := capacityReservationXML{ID: r.ID, ARN: "arn:aws:ec2:" + e.region + ":" + r.OwnerID + ":capacity-reservation/" + r.ID,
			OwnerID: r.OwnerID, InstanceType: r.InstanceType, InstancePlatform: "Linux/UNIX", AvailabilityZone: r.Zone, Tenancy: "default",
			TotalInstanceCount: r.Total, AvailableInstanceCount: e.reservationAvailableLocked(r), State: e.reservationStateLocked(r),
			InstanceMatchCriteria: r.MatchCriteria, ReservationType: r.Type, EndDateType: "unlimited", Tags: tagsXML(r.Tags)}
		if !r.EndTime.IsZero() {
			x.EndDateType, x.EndDate = "limited", ec2Time(r.EndTime)
		}
		out.CapacityReservations = append(out.CapacityReservations, x)
	}
	return out, nil
}

// reservationFor picks the reservation a launch of the override goes into, or says why it cannot
// launch: the template's target when it names one (which must be active, of that type and zone,
// and have room: otherwise ReservationCapacityExceeded, EC2's code), else an open reservation
// with room that the template does not opt out of, else none. Callers hold e.mu.
func (e *Emulator) reservationFor(lt *LaunchTemplate, instanceType, zone, capacityType string) (id, code, msg string) {
	if lt.CapacityReservationID != "" {
		r := e.reservationLocked(lt.CapacityReservationID)
		switch {
		case r == nil:
			return "", "InvalidCapacityReservationId.NotFound", fmt.Sprintf("The capacity reservation ID '%s' does not exist", lt.CapacityReservationID)
		case r.InstanceType != instanceType || r.Zone != zone:
			return "", "InvalidParameterValue", fmt.Sprintf("capacity reservation %s is for %s in %s, not %s in %s", r.ID, r.InstanceType, r.Zone, instanceType, zone)
		case (r.Type == ReservationTypeCapacityBlock) != (capacityType == ReservationTypeCapacityBlock):
			return "", "InvalidParameterValue", fmt.Sprintf("capacity reservation %s is of type %s; launch it with DefaultTargetCapacityType %s",
				r.ID, r.Type, map[bool]string{true: "capacity-block", false: "on-demand"}[r.Type == ReservationTypeCapacityBlock])
		case e.reservationStateLocked(r) != ReservationStateActive:
			return "", "ReservationCapacityExceeded", fmt.Sprintf("Capacity reservation %s is %s. (SIMULATED)", r.ID, e.reservationStateLocked(r))
		case e.reservationAvailableLocked(r) < 1:
			return "", "ReservationCapacityExceeded", fmt.Sprintf("Insufficient capacity in capacity reservation %s: all %s instances are in use. (SIMULATED)",
				r.ID, strconv.Itoa(r.Total))
		}
		return r.ID, "", ""
	}
	if capacityType != "on-demand" || lt.CapacityReservationPreference == "none" {
		return "", "", ""
	}
	for _, r := range e.world.reservations {
		if r.MatchCriteria == MatchCriteriaOpen && r.Type == ReservationTypeDefault && r.InstanceType == instanceType && r.Zone == zone &&
			e.reservationStateLocked(r) == ReservationStateActive && e.reservationAvailableLocked(r) > 0 {
			return r.ID, "", ""
		}
	}
	return "", "", ""
}
