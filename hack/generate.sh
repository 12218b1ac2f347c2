#!/usr/bin/env bash
# Regenerates, from the markers in pkg/apis:
#   - the deepcopy functions of the API packages and the CRDs in manifests/crds (controller-gen),
#     and copies the CRDs into the Helm chart (charts/tailor/crds);
#   - the typed clientset, listers and informers in pkg/generated (k8s.io/code-generator);
#   - the API reference, docs/reference/api.md (crd-ref-docs, with the templates in hack/apiref).
# Run from anywhere; it works from the repository root.
#
# Every generator runs through `go run module@version`, pinned here, so no tool needs installing
# and every checkout generates byte-identical output. code-generator's version matches the k8s.io
# staging modules in go.mod.
set -euo pipefail

CONTROLLER_GEN="sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0"
CODE_GENERATOR="k8s.io/code-generator/cmd"
CODE_GENERATOR_VERSION="v0.36.3"
CRD_REF_DOCS="github.com/elastic/crd-ref-docs@v0.3.0"

MODULE="github.com/tailor-sh/tailor"
APIS="${MODULE}/pkg/apis"
OUT="pkg/generated"
# Group/version folders under pkg/apis whose types carry +genclient.
GROUP_VERSIONS=(karpenter/v1 aws/v1 autoscaling/v1)

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Stale CRDs (e.g. of a renamed kind) would otherwise linger and be embedded by manifests/crds.
find manifests/crds -name '*.yaml' -delete

go run "${CONTROLLER_GEN}" \
  object \
  crd:crdVersions=v1 \
  output:crd:artifacts:config=manifests/crds \
  paths=./pkg/apis/karpenter/v1 \
  paths=./pkg/apis/aws/v1 \
  paths=./pkg/apis/autoscaling/v1

# Validation that markers cannot express (fields of corev1.Taint, values of string maps).
go run ./hack/crdpatch manifests/crds

# The chart ships the same CRDs; Helm reads them only from inside the chart's folder.
find charts/tailor/crds -name '*.yaml' -delete
cp manifests/crds/*.yaml charts/tailor/crds/

# Everything under pkg/generated is generated, so it is rebuilt from nothing: a removed type leaves
# no stale client behind. The fake clientset is not generated: tests run against a real API server.
rm -rf "${OUT}"
inputs=()
packages=()
for gv in "${GROUP_VERSIONS[@]}"; do
  inputs+=(--input "${gv}")
  packages+=("${APIS}/${gv}")
done

go run "${CODE_GENERATOR}/client-gen@${CODE_GENERATOR_VERSION}" \
  --go-header-file /dev/null \
  --output-dir "${OUT}/clientset" \
  --output-pkg "${MODULE}/${OUT}/clientset" \
  --clientset-name versioned \
  --fake-clientset=false \
  --input-base "${APIS}" \
  "${inputs[@]}"

go run "${CODE_GENERATOR}/lister-gen@${CODE_GENERATOR_VERSION}" \
  --go-header-file /dev/null \
  --output-dir "${OUT}/listers" \
  --output-pkg "${MODULE}/${OUT}/listers" \
  "${packages[@]}"

go run "${CODE_GENERATOR}/informer-gen@${CODE_GENERATOR_VERSION}" \
  --go-header-file /dev/null \
  --output-dir "${OUT}/informers" \
  --output-pkg "${MODULE}/${OUT}/informers" \
  --versioned-clientset-package "${MODULE}/${OUT}/clientset/versioned" \
  --listers-package "${MODULE}/${OUT}/listers" \
  "${packages[@]}"

# The reference is rendered from the same types and markers as the CRDs, so a field's documentation,
# default and validation cannot drift from what the API server enforces.
go run "${CRD_REF_DOCS}" \
  --log-level ERROR \
  --config hack/apiref/config.yaml \
  --templates-dir hack/apiref/templates \
  --source-path ./pkg/apis \
  --renderer markdown \
  --output-path docs/reference/api.md
