package userdata

import (
	gostrings "strings"
	"testing"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
)

// TestInstanceStoreRAID0 checks that each family's user data asks its bootstrap for the
// instance-store array in the family's own words, that a booting node reads it back, and that
// without the policy nothing of it is written.
func TestInstanceStoreRAID0(t *testing.T) {
	for _, tc := range []struct {
		family string
		want   []string
	}{
		{awsv1.AMIFamilyAL2023, []string{"localStorage:", "strategy: RAID0"}},
		{awsv1.AMIFamilyAL2, []string{"--local-disks raid0"}},
		{awsv1.AMIFamilyBottlerocket, []string{`[settings.bootstrap-commands.000-mount-instance-storage]`,
			`["apiclient", "ephemeral-storage", "init"]`,
			`["apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"]`,
			`essential = true`, `mode = "always"`}},
	} {
		t.Run(tc.family, func(t *testing.T) {
			n := testNode()
			n.InstanceStoreRAID0 = true
			data, err := Render(tc.family, n, "")
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			for _, w := range tc.want {
				if !gostrings.Contains(data, w) {
					t.Errorf("user data lacks %q:\n%s", w, data)
				}
			}
			got, err := Parse(data)
			if err != nil || !got.InstanceStoreRAID0 {
				t.Fatalf("Parse = RAID0 %v, %v; want the array read back", got.InstanceStoreRAID0, err)
			}

			plain, err := Render(tc.family, testNode(), "")
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			for _, w := range tc.want {
				if gostrings.Contains(plain, w) {
					t.Errorf("user data without the policy has %q", w)
				}
			}
			if got, err := Parse(plain); err != nil || got.InstanceStoreRAID0 {
				t.Errorf("Parse without the policy = RAID0 %v, %v", got.InstanceStoreRAID0, err)
			}
		})
	}
}
