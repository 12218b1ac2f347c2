#!/usr/bin/env bash
# Regenerates the deepcopy functions of the API packages and the CRDs in manifests/crds from the
# kubebuilder markers in pkg/apis, and copies the CRDs into the Helm chart (charts/tailor/crds).
# Run from anywhere; it works from the repository root.
#
# controller-gen runs through `go run module@version`, pinned here, so no tool needs installing
# and every checkout generates byte-identical output.
set -euo pipefail

CONTROLLER_GEN="sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0"

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Stale CRDs (e.g. of a renamed kind) would otherwise linger and be embedded by manifests/crds.
find manifests/crds -name '*.yaml' -delete

go run "${CONTROLLER_GEN}" \
  object \
  crd:crdVersions=v1 \
  output:crd:artifacts:config=manifests/crds \
  paths=./pkg/apis/karpenter/v1 \
  paths=./pkg/apis/aws/v1

# Validation that markers cannot express (fields of corev1.Taint, values of string maps).
go run ./hack/crdpatch manifests/crds

# The chart ships the same CRDs; Helm reads them only from inside the chart's folder.
find charts/tailor/crds -name '*.yaml' -delete
cp manifests/crds/*.yaml charts/tailor/crds/
