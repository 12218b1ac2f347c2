// Package manifests holds Tailor's deployable configuration; Go code embeds the parts it runs
// with, so the sandbox and the tests use exactly what users deploy.
package manifests

import _ "embed"

// SchedulerConfig is the default KubeSchedulerConfiguration, scheduler-config.yaml.
//
//go:embed scheduler-config.yaml
var SchedulerConfig []byte
