package tailor

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestDecodeArgs(t *testing.T) {
	cases := []struct {
		name    string
		raw     string
		check   func(*Args) bool
		wantErr string
	}{
		{name: "defaults", raw: `{}`, check: func(a *Args) bool {
			return a.BatchIdleDuration.Duration == DefaultBatchIdleDuration && a.BatchMaxDuration.Duration == DefaultBatchMaxDuration &&
				a.ConsolidationValidationPeriod.Duration == 15*time.Second && a.DisruptionPollInterval.Duration == 10*time.Second &&
				*a.SpotToSpotMinInstanceTypes == 15 && a.MinValuesPolicy == "Strict"
		}},
		{name: "set", raw: `{"consolidationValidationPeriod":"2s","disruptionPollInterval":"1s","spotToSpotMinInstanceTypes":5}`, check: func(a *Args) bool {
			return a.ConsolidationValidationPeriod.Duration == 2*time.Second && a.DisruptionPollInterval.Duration == time.Second &&
				*a.SpotToSpotMinInstanceTypes == 5
		}},
		{name: "negative validation period", raw: `{"consolidationValidationPeriod":"-1s"}`, wantErr: "consolidationValidationPeriod"},
		{name: "negative poll", raw: `{"disruptionPollInterval":"-1s"}`, wantErr: "disruptionPollInterval"},
		{name: "spot-to-spot minimum too small", raw: `{"spotToSpotMinInstanceTypes":0}`, wantErr: "spotToSpotMinInstanceTypes"},
		{name: "spot-to-spot minimum above 60", raw: `{"spotToSpotMinInstanceTypes":61}`, wantErr: "spotToSpotMinInstanceTypes"},
		{name: "gang completion timeout by default", raw: `{}`, check: func(a *Args) bool { return a.GangCompletionTimeout.Duration == 5*time.Minute }},
		{name: "negative gang completion timeout", raw: `{"gangCompletionTimeout":"-1m"}`, wantErr: "gangCompletionTimeout: Invalid value"},
		{name: "node repair off by default", raw: `{}`, check: func(a *Args) bool { return !a.NodeRepair }},
		{name: "node repair on", raw: `{"nodeRepair":true}`, check: func(a *Args) bool { return a.NodeRepair }},
		{name: "node repair not a bool", raw: `{"nodeRepair":"yes"}`, wantErr: ": json: cannot unmarshal"},
		{name: "best-effort minValues", raw: `{"minValuesPolicy":"BestEffort"}`, check: func(a *Args) bool { return a.MinValuesPolicy == "BestEffort" }},
		{name: "workers by default", raw: `{}`, check: func(a *Args) bool { return *a.TerminationWorkers == 100 && *a.NodeClaimWorkers == 100 }},
		{name: "workers set", raw: `{"terminationWorkers":500,"nodeClaimWorkers":8}`, check: func(a *Args) bool {
			return *a.TerminationWorkers == 500 && *a.NodeClaimWorkers == 8
		}},
		{name: "no termination workers", raw: `{"terminationWorkers":0}`, wantErr: "terminationWorkers: Invalid value: 0: must be between 1 and 1000"},
		{name: "too many nodeclaim workers", raw: `{"nodeClaimWorkers":1001}`, wantErr: "nodeClaimWorkers: Invalid value: 1001"},
		{name: "unknown minValues policy", raw: `{"minValuesPolicy":"Sometimes"}`, wantErr: "minValuesPolicy"},
		{name: "max below idle", raw: `{"batchIdleDuration":"2s","batchMaxDuration":"1s"}`, wantErr: "batchMaxDuration"},
		{name: "misspelt knob", raw: `{"consolidationValidationPeriods":"2s"}`, wantErr: `: unknown field "consolidationValidationPeriods"`},
		{name: "knob twice", raw: `{"strandedAfter":"1m","strandedAfter":"2m"}`, wantErr: `: duplicate field "strandedAfter"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args, err := DecodeArgs(&runtime.Unknown{Raw: []byte(tc.raw), ContentType: runtime.ContentTypeJSON})
			if tc.wantErr != "" {
				want := "pluginConfig[Tailor].args." + tc.wantErr
				if strings.HasPrefix(tc.wantErr, ":") {
					want = "pluginConfig[Tailor].args" + tc.wantErr
				}
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("error = %v, want one saying %s", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(args) {
				t.Fatalf("unexpected args: %+v", args)
			}
		})
	}
}
