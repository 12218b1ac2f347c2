package v1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Never is the string that turns a NillableDuration off (e.g. expireAfter: Never).
const Never = "Never"

// NillableDuration is a duration that can also be "Never". A nil Duration means Never.
//
// It is a struct wrapping a pointer, as in Karpenter, so that `spec.expireAfter.Duration` reads the
// same in both code bases. In JSON it is always a string: "Never" or a Go duration such as "720h".
// The zero value therefore serializes as "Never", not as "0s": code that builds NodePools in Go
// must set durations it wants to be zero explicitly (see NewNillableDuration).
//
// The CRD schema comes from the markers on each field that uses it (type string, pattern
// `^(([0-9]+(s|m|h))+|Never)$`), because the Go shape (a struct) is not what is on the wire.
type NillableDuration struct {
	*time.Duration
}

// NewNillableDuration returns a NillableDuration holding d (not Never).
func NewNillableDuration(d time.Duration) NillableDuration {
	return NillableDuration{Duration: &d}
}

// IsNever reports whether the duration is "Never".
func (d NillableDuration) IsNever() bool { return d.Duration == nil }

// String returns "Never" or the Go duration string. It shadows the promoted (*time.Duration).String,
// which would panic on Never.
func (d NillableDuration) String() string {
	if d.Duration == nil {
		return Never
	}
	return d.Duration.String()
}

// UnmarshalJSON accepts "Never", a Go duration string, or null (treated as Never, like an unset
// pointer). Anything else is an error that names the offending value.
func (d *NillableDuration) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		d.Duration = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"720h\" or %q, got %s", Never, b)
	}
	if s == Never {
		d.Duration = nil
		return nil
	}
	parsed, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q: %w", s, err)
	}
	d.Duration = &parsed
	return nil
}

// MarshalJSON writes "Never" or the Go duration string.
func (d NillableDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// ToUnstructured implements value.UnstructuredConverter so that runtime.DefaultUnstructuredConverter
// (used by server-side apply and by dynamic clients) writes the same string as MarshalJSON instead
// of reflecting over the struct.
func (d NillableDuration) ToUnstructured() interface{} {
	return d.String()
}
