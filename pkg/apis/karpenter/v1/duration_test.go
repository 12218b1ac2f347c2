package v1

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestNillableDurationUnmarshal(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    *time.Duration
		wantErr bool
	}{
		{in: `"Never"`, want: nil},
		{in: `null`, want: nil},
		{in: `"0s"`, want: ptr(0)},
		{in: `"1m"`, want: ptr(time.Minute)},
		{in: `"720h"`, want: ptr(720 * time.Hour)},
		{in: `"1h30m"`, want: ptr(90 * time.Minute)},
		{in: `"abc"`, wantErr: true},
		{in: `"never"`, wantErr: true},
		{in: `""`, wantErr: true},
		{in: `60`, wantErr: true},
		{in: `{}`, wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			var d NillableDuration
			err := json.Unmarshal([]byte(tc.in), &d)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("want an error, got %v", d)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (d.Duration == nil) != (tc.want == nil) || (d.Duration != nil && *d.Duration != *tc.want) {
				t.Fatalf("got %v, want %v", d, tc.want)
			}
		})
	}
}

func TestNillableDurationRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   NillableDuration
		want string
	}{
		{name: "never", in: NillableDuration{}, want: `"Never"`},
		{name: "zero", in: NewNillableDuration(0), want: `"0s"`},
		{name: "minute", in: NewNillableDuration(time.Minute), want: `"1m0s"`},
		{name: "30 days", in: NewNillableDuration(720 * time.Hour), want: `"720h0m0s"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("marshal: got %s, want %s", b, tc.want)
			}
			var back NillableDuration
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if back.String() != tc.in.String() {
				t.Fatalf("round trip: got %v, want %v", back, tc.in)
			}
		})
	}
}

// The unstructured converter is what server-side apply and dynamic clients go through; without
// ToUnstructured it would turn the struct into {"Duration": ...}.
func TestNillableDurationUnstructured(t *testing.T) {
	in := &NodePool{Spec: NodePoolSpec{
		Disruption: Disruption{ConsolidateAfter: NewNillableDuration(time.Minute)},
		Template:   NodeClaimTemplate{Spec: NodeClaimTemplateSpec{ExpireAfter: NillableDuration{}}},
	}}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(in)
	if err != nil {
		t.Fatal(err)
	}
	spec := u["spec"].(map[string]interface{})
	if got := spec["disruption"].(map[string]interface{})["consolidateAfter"]; got != "1m0s" {
		t.Fatalf("consolidateAfter: got %#v", got)
	}
	if got := spec["template"].(map[string]interface{})["spec"].(map[string]interface{})["expireAfter"]; got != Never {
		t.Fatalf("expireAfter: got %#v", got)
	}
	out := &NodePool{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, out); err != nil {
		t.Fatal(err)
	}
	if out.Spec.Disruption.ConsolidateAfter.String() != "1m0s" || !out.Spec.Template.Spec.ExpireAfter.IsNever() {
		t.Fatalf("back from unstructured: %+v", out.Spec)
	}
}

func ptr(d time.Duration) *time.Duration { return &d }
