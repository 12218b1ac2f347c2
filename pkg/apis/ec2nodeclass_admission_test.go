package apis_test

import "testing"

const minimalEC2NodeClass = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole-tailor
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: tailor}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: tailor}}]
`

func TestEC2NodeClassDefaults(t *testing.T) {
	obj := fromYAML(t, minimalEC2NodeClass)
	if errs := admitters(t)["EC2NodeClass"].admit(obj, nil); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	md := obj["spec"].(map[string]interface{})["metadataOptions"].(map[string]interface{})
	want := map[string]interface{}{"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled", "httpPutResponseHopLimit": int64(1), "httpTokens": "required"}
	for k, v := range want {
		if md[k] != v {
			t.Errorf("metadataOptions.%s: got %#v, want %#v", k, md[k], v)
		}
	}
}

func TestEC2NodeClassValidation(t *testing.T) {
	nc := admitters(t)["EC2NodeClass"]
	base := fromYAML(t, minimalEC2NodeClass)
	for _, tc := range []struct {
		name, patch, field, fragment string // empty field: must be admitted
	}{
		{name: "instance profile instead of role", patch: `spec: {role: null, instanceProfile: my-profile}`},
		{name: "role and instance profile", patch: `spec: {instanceProfile: my-profile}`,
			field: "spec", fragment: "exactly one of ['role', 'instanceProfile']"},
		{name: "neither role nor instance profile", patch: `spec: {role: null}`,
			field: "spec", fragment: "exactly one of ['role', 'instanceProfile']"},
		{name: "pinned alias", patch: `spec: {amiSelectorTerms: [{alias: al2023@v20240625}]}`},
		{name: "bottlerocket alias with family", patch: `spec: {amiFamily: Bottlerocket, amiSelectorTerms: [{alias: bottlerocket@latest}]}`},
		{name: "alias without version", patch: `spec: {amiSelectorTerms: [{alias: al2023}]}`,
			field: "spec.amiSelectorTerms[0].alias", fragment: "improperly formatted"},
		{name: "alias of unknown family", patch: `spec: {amiSelectorTerms: [{alias: ubuntu@latest}]}`,
			field: "spec.amiSelectorTerms[0].alias", fragment: "family is not supported"},
		{name: "windows2025 alias", patch: `spec: {amiSelectorTerms: [{alias: windows2025@latest}]}`},
		{name: "windows2025 alias with its family", patch: `spec: {amiFamily: Windows2025, amiSelectorTerms: [{alias: windows2025@latest}]}`},
		{name: "windows2025 family by AMI tags", patch: `spec: {amiFamily: Windows2025, amiSelectorTerms: [{tags: {team: a}}]}`},
		{name: "windows2025 alias under another family", patch: `spec: {amiFamily: Windows2022, amiSelectorTerms: [{alias: windows2025@latest}]}`,
			field: "spec", fragment: "amiFamily must be 'Windows2025' or 'Custom'"},
		{name: "pinned windows2025 alias", patch: `spec: {amiSelectorTerms: [{alias: windows2025@v20250101}]}`,
			field: "spec.amiSelectorTerms[0].alias", fragment: "only specify version 'latest'"},
		{name: "pinned windows alias", patch: `spec: {amiSelectorTerms: [{alias: windows2022@v1}]}`,
			field: "spec.amiSelectorTerms[0].alias", fragment: "only specify version 'latest'"},
		{name: "alias with another term", patch: `spec: {amiSelectorTerms: [{alias: al2023@latest}, {id: ami-123}]}`,
			field: "spec.amiSelectorTerms", fragment: "combination of other amiSelectorTerms"},
		{name: "alias with tags", patch: `spec: {amiSelectorTerms: [{alias: al2023@latest, tags: {a: b}}]}`,
			field: "spec.amiSelectorTerms", fragment: "'alias' is mutually exclusive"},
		{name: "id with name", patch: `spec: {amiFamily: AL2023, amiSelectorTerms: [{id: ami-123, name: foo}]}`,
			field: "spec.amiSelectorTerms", fragment: "'id' is mutually exclusive"},
		{name: "empty term", patch: `spec: {amiFamily: AL2023, amiSelectorTerms: [{}]}`,
			field: "spec.amiSelectorTerms", fragment: "expected at least one"},
		{name: "no terms", patch: `spec: {amiSelectorTerms: []}`,
			field: "spec.amiSelectorTerms", fragment: "should have at least 1 items"},
		{name: "family mismatching alias", patch: `spec: {amiFamily: AL2, amiSelectorTerms: [{alias: al2023@latest}]}`,
			field: "spec", fragment: "amiFamily must be 'AL2023' or 'Custom'"},
		{name: "custom family with alias", patch: `spec: {amiFamily: Custom, amiSelectorTerms: [{alias: al2023@latest}]}`},
		{name: "no alias and no family", patch: `spec: {amiSelectorTerms: [{tags: {team: a}}]}`,
			field: "spec", fragment: "must specify amiFamily"},
		{name: "unknown family", patch: `spec: {amiFamily: Ubuntu}`, field: "spec.amiFamily", fragment: "Unsupported value"},
		{name: "no subnet terms", patch: `spec: {subnetSelectorTerms: []}`,
			field: "spec.subnetSelectorTerms", fragment: "cannot be empty"},
		{name: "subnet id with tags", patch: `spec: {subnetSelectorTerms: [{id: subnet-123, tags: {a: b}}]}`,
			field: "spec.subnetSelectorTerms", fragment: "'id' is mutually exclusive"},
		{name: "security group by name", patch: `spec: {securityGroupSelectorTerms: [{name: nodes}]}`},
		{name: "empty tag value", patch: `spec: {securityGroupSelectorTerms: [{tags: {a: ""}}]}`,
			field: "spec.securityGroupSelectorTerms[0].tags", fragment: "empty tag keys or values"},
		{name: "capacity reservation by id", patch: `spec: {capacityReservationSelectorTerms: [{id: cr-0123}]}`},
		{name: "capacity reservation owner", patch: `spec: {capacityReservationSelectorTerms: [{ownerID: "12", tags: {a: b}}]}`,
			field: "spec.capacityReservationSelectorTerms[0].ownerID", fragment: "should match"},
		{name: "cluster tag", patch: `spec: {tags: {kubernetes.io/cluster/tailor: owned}}`,
			field: "spec.tags", fragment: "kubernetes.io/cluster/"},
		{name: "nodepool tag", patch: `spec: {tags: {karpenter.sh/nodepool: a}}`,
			field: "spec.tags", fragment: "karpenter.sh/nodepool"},
		{name: "user tags", patch: `spec: {tags: {team: platform, Name: ""}}`},
		{name: "kubelet", patch: `spec: {kubelet: {maxPods: 110, kubeReserved: {cpu: 100m, memory: 1Gi}, evictionHard: {memory.available: 5%, nodefs.available: 1Gi},
			evictionSoft: {memory.available: 10%}, evictionSoftGracePeriod: {memory.available: 1m}, imageGCHighThresholdPercent: 85, imageGCLowThresholdPercent: 80}}`},
		{name: "kubeReserved unknown key", patch: `spec: {kubelet: {kubeReserved: {gpu: "1"}}}`,
			field: "spec.kubelet.kubeReserved", fragment: "valid keys for kubeReserved"},
		{name: "systemReserved negative", patch: `spec: {kubelet: {systemReserved: {cpu: -1}}}`,
			field: "spec.kubelet.systemReserved", fragment: "cannot be a negative"},
		{name: "evictionHard not a quantity", patch: `spec: {kubelet: {evictionHard: {memory.available: lots}}}`,
			field: "spec.kubelet.evictionHard", fragment: "should match"},
		{name: "kubeReserved not a quantity", patch: `spec: {kubelet: {kubeReserved: {cpu: lots}}}`,
			field: "spec.kubelet.kubeReserved", fragment: "should match"},
		{name: "evictionSoft without grace period", patch: `spec: {kubelet: {evictionSoft: {memory.available: 10%}}}`,
			field: "spec.kubelet", fragment: "evictionSoft OwnerKey"},
		{name: "image GC thresholds inverted", patch: `spec: {kubelet: {imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 60}}`,
			field: "spec.kubelet", fragment: "imageGCHighThresholdPercent must be greater"},
		{name: "block devices", patch: `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 100Gi, volumeType: gp3, encrypted: true}}]}`},
		{name: "two root volumes", patch: `spec: {blockDeviceMappings: [{rootVolume: true, ebs: {volumeSize: 20Gi}}, {rootVolume: true, ebs: {volumeSize: 20Gi}}]}`,
			field: "spec.blockDeviceMappings", fragment: "only one blockDeviceMappings with rootVolume"},
		{name: "volume without size or snapshot", patch: `spec: {blockDeviceMappings: [{ebs: {volumeType: gp3}}]}`,
			field: "spec.blockDeviceMappings[0].ebs", fragment: "snapshotID or volumeSize"},
		{name: "volume size in Mi", patch: `spec: {blockDeviceMappings: [{ebs: {volumeSize: 100Mi}}]}`,
			field: "spec.blockDeviceMappings[0].ebs.volumeSize", fragment: "should match"},
		{name: "hop limit 0", patch: `spec: {metadataOptions: {httpPutResponseHopLimit: 0}}`,
			field: "spec.metadataOptions.httpPutResponseHopLimit", fragment: "greater than or equal to 1"},
		{name: "instance store RAID1", patch: `spec: {instanceStorePolicy: RAID1}`,
			field: "spec.instanceStorePolicy", fragment: "Unsupported value"},
		{name: "everything else", patch: `spec: {instanceStorePolicy: RAID0, detailedMonitoring: true, associatePublicIPAddress: false, context: c-123, userData: "#!/bin/bash"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := nc.admit(withPatch(t, base, tc.patch), nil)
			if tc.field == "" {
				if len(errs) > 0 {
					t.Fatalf("refused: %v", errs.ToAggregate())
				}
				return
			}
			expectRefused(t, errs, tc.field, tc.fragment)
		})
	}
}
