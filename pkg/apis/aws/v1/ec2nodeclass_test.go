package v1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAMIFamily(t *testing.T) {
	custom := AMIFamilyCustom
	for _, tc := range []struct {
		name   string
		spec   EC2NodeClassSpec
		family string
		alias  *Alias
	}{
		{name: "alias", spec: EC2NodeClassSpec{AMISelectorTerms: []AMISelectorTerm{{Alias: "al2023@latest"}}},
			family: AMIFamilyAL2023, alias: &Alias{Family: AMIFamilyAL2023, Version: "latest"}},
		{name: "pinned bottlerocket", spec: EC2NodeClassSpec{AMISelectorTerms: []AMISelectorTerm{{Alias: "bottlerocket@v1.20.0"}}},
			family: AMIFamilyBottlerocket, alias: &Alias{Family: AMIFamilyBottlerocket, Version: "v1.20.0"}},
		{name: "explicit family wins", spec: EC2NodeClassSpec{AMIFamily: &custom, AMISelectorTerms: []AMISelectorTerm{{Alias: "al2@latest"}}},
			family: AMIFamilyCustom, alias: &Alias{Family: AMIFamilyAL2, Version: "latest"}},
		{name: "no alias", spec: EC2NodeClassSpec{AMIFamily: &custom, AMISelectorTerms: []AMISelectorTerm{{ID: "ami-123"}}},
			family: AMIFamilyCustom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := &EC2NodeClass{Spec: tc.spec}
			if got := nc.AMIFamily(); got != tc.family {
				t.Errorf("AMIFamily() = %s, want %s", got, tc.family)
			}
			got := nc.Alias()
			if (got == nil) != (tc.alias == nil) || (got != nil && *got != *tc.alias) {
				t.Errorf("Alias() = %+v, want %+v", got, tc.alias)
			}
		})
	}
}

func TestEC2NodeClassReady(t *testing.T) {
	now := time.Now()
	nc := &EC2NodeClass{}
	for _, c := range readyDependents[:len(readyDependents)-1] {
		nc.SetCondition(c, metav1.ConditionTrue, "", "", now)
	}
	if r := nc.GetCondition(ConditionTypeReady); r == nil || r.Status != metav1.ConditionUnknown {
		t.Fatalf("Ready before validation: %+v", r)
	}
	nc.SetCondition(ConditionTypeValidationSucceeded, metav1.ConditionTrue, "", "", now)
	if !nc.IsTrue(ConditionTypeReady) {
		t.Fatalf("Ready after every dependent is True: %+v", nc.Status.Conditions)
	}
}
