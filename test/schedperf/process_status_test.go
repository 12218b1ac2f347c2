package schedperf

import (
	"strings"
	"testing"
)

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       memory
		wantErr    string
	}{
		{name: "both", text: "Name:\tkube-scheduler\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t12\n", want: memory{rss: 100 << 20, hwm: 200 << 20}},
		{name: "no VmHWM", text: "VmRSS:\t 1 kB\n", wantErr: "missing"},
		{name: "not kB", text: "VmRSS:\t 1 MB\nVmHWM:\t 1 kB\n", wantErr: "VmRSS: want a number of kB"},
		{name: "not a number", text: "VmRSS:\t x kB\nVmHWM:\t 1 kB\n", wantErr: "VmRSS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatus(strings.NewReader(tc.text))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseStatus = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
