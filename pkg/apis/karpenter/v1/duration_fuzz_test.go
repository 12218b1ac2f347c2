package v1

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzNillableDuration reads a NodePool duration field (expireAfter, consolidateAfter,
// terminationGracePeriod) as the API server hands it over. Properties: no panic; what reads is
// written back as "Never" or a Go duration that reads as the same value; an error quotes what
// was given.
func FuzzNillableDuration(f *testing.F) {
	for _, s := range []string{`"720h"`, `"Never"`, `null`, `"30s"`, `"1h30m0s"`, `"0s"`, `"-5m"`, `5`, `"1d"`, `"never"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var d NillableDuration
		if err := json.Unmarshal([]byte(raw), &d); err != nil {
			if json.Valid([]byte(raw)) && !strings.Contains(err.Error(), "duration") {
				t.Fatalf("error does not say it is about a duration: %v", err)
			}
			return
		}
		out, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var back NillableDuration
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%s written as %s does not read back: %v", raw, out, err)
		}
		if d.IsNever() != back.IsNever() || !d.IsNever() && *d.Duration != *back.Duration {
			t.Fatalf("%s read as %s, written as %s, read back as %s", raw, d, out, back)
		}
	})
}
