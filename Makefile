# Tailor's build. CI runs `make test` through .ci/run; everything else is for people.
GO ?= go
# Pinned tools run with `go run`, so a fresh machine needs only Go and the module proxy.
GOLANGCI_LINT ?= $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
BENCHSTAT ?= $(GO) run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
E2E_TIMEOUT ?= 30m

.PHONY: help harness all build test unit e2e e2e-suite chaos chaos-failover chaos-ec2 chaos-day chaos-storm fuzz-parsers fuzz-short run bench bench-scale generate ec2facts lint verify verify-generate chart-lint image sbom actionlint release-dry-run release-publish

all: build test

help: ## list the targets and what each runs
	@awk 'BEGIN {FS = ":.*## "} /^[a-z][a-z0-9-]*:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)


build: ## compile both binaries into bin/
	$(GO) build -o bin/tailor-scheduler ./cmd/scheduler
	$(GO) build -o bin/tailor ./cmd/tailor

# make test leaves out of its unit step the packages its e2e step runs in full (the suites, the
# harness, the CLI, the chart): their short tests run there too, and each links a binary with a
# control plane in it.
# The e2e suites' seven binaries link (108 s on two cores, measured alone) beside the unit tests, which
# leave a core idle now and then: together they take about 25 s less than one after the other.
test: ## everything CI runs (unit includes every fuzz target's seeds and kept inputs; fuzz-short explores them)
	@mkdir -p $(E2E_OUT)
	BUILD_ONLY=1 BUILT=0 OUT=$(E2E_OUT) GO=$(GO) ./hack/e2e.sh >$(E2E_OUT)/build.out 2>&1 & build=$$!; \
	$(MAKE) unit UNIT_PACKAGES="$$($(GO) list ./... | grep -v -E '/test/(e2e|harness)(/|$$)|/cmd/tailor$$|/charts$$' | tr '\n' ' ')"; unit=$$?; \
	wait $$build; built=$$?; \
	if [ $$built -ne 0 ]; then cat $(E2E_OUT)/build.out; echo 'make test: building the e2e suites failed'; fi; \
	[ $$unit -eq 0 ] && [ $$built -eq 0 ]
	$(MAKE) fuzz-short
	$(MAKE) e2e BUILT=1

# Most of this step is linking a test binary per package (about 4 of its 6 minutes on two cores):
# -ldflags=-w leaves out DWARF, which no test reads (stack traces keep their files and lines), and
# -vet=off skips the checks go vet has just run over every package.
UNIT_PACKAGES ?= ./...
unit: ## unit and table tests, fast
	$(GO) vet ./...
	$(GO) test -short -count=1 -vet=off -ldflags=-w $(UNIT_PACKAGES)

# Every test that starts a control plane. The e2e tests run one process each, E2E_JOBS side by
# side: they wait on their clusters as much as they compute. On two cores three took the e2e step
# from about 770 s to 570 s, and four, once a test's CPU was cut by a quarter (GOGC in
# hack/e2e.sh, instance types shared between rounds), from 534 s to 470 s. Each failure that load
# brought out was a race of Tailor's, and each is fixed (docs/performance.md lists them);
# E2E_JOBS=2 is the quieter choice when one is suspected. Logs go to E2E_OUT; what failed is
# printed last, so that the end of a CI log names it.
E2E_JOBS ?= 4
E2E_OUT ?= $(or $(TMPDIR),/tmp)/tailor-e2e
E2E_RUN ?= .
# BUILT=1 runs the suites' binaries already in E2E_OUT/bin (see test).
BUILT ?= 0
e2e: ## tests against a real control plane (etcd + kube-apiserver + kwok in-process): every suite of test/e2e (E2E_RUN selects), the workload harness's fixed seeds, the CLI's sandbox tests, the chart applied
	JOBS=$(E2E_JOBS) OUT=$(E2E_OUT) RUN='$(E2E_RUN)' GO=$(GO) BUILT=$(BUILT) ./hack/e2e.sh

# One or more suites of test/e2e (provisioning, disruption, lifecycle, faults, aws, install, ai;
# see test/e2e/README.md), as make e2e runs them, without the other packages.
SUITE ?=
e2e-suite: ## the e2e suites named by SUITE (e.g. SUITE=faults or SUITE="aws install"; E2E_RUN selects), each test in its own process
	@test -n "$(SUITE)" || { echo 'SUITE= names the suites, e.g. SUITE=provisioning; see test/e2e/README.md'; exit 2; }
	SUITES='$(SUITE)' PACKAGES= JOBS=$(E2E_JOBS) OUT=$(E2E_OUT) RUN='$(E2E_RUN)' GO=$(GO) ./hack/e2e.sh

FUZZTIME ?= 30s
fuzz-parsers: ## every Go fuzz target of a parser of outside input (user data, TOML, budgets, requirements, selectors, SQS notices, the emulator's EC2 protocol) for FUZZTIME each
	FUZZTIME=$(FUZZTIME) GO=$(GO) ./hack/fuzz-parsers.sh

# make test explores every fuzz target under pkg/: `go test -fuzz` compiles everything a target
# imports once more, instrumented, so no such package, tests included, may import client-go (the
# instrumented build of client-go and the API groups it pulls in is hundreds of CPU-seconds cold);
# with FUZZ_LIGHT=1 the script refuses a target whose build does, before building it. The two
# targets that go through the AWS SDK (selectors in pkg/aws/resolve, the emulator's protocol)
# share its instrumented EC2 client, the one heavy build left. Each explores FUZZ_EXECS inputs: a
# count, not a time, so a loaded machine explores as much as a quiet one and the fuzzing engine's
# own deadline cannot fail a run. make fuzz-parsers explores every target for FUZZTIME instead.
FUZZ_EXECS ?= 300x
fuzz-short: ## every fuzz target, FUZZ_EXECS inputs each (part of make test)
	FUZZ_LIGHT=1 FUZZTIME=$(FUZZ_EXECS) GO=$(GO) ./hack/fuzz-parsers.sh

chaos: chaos-failover chaos-ec2 chaos-day chaos-storm ## every long fault test, beside make test's short ones

# Every failover and API server outage test, the long variants too, with a 30 s outage.
OUTAGE ?= 30s
chaos-failover: ## leader failover and API server outage e2e tests, long variants included (OUTAGE=30s)
	TAILOR_CHAOS=1 TAILOR_OUTAGE=$(OUTAGE) $(GO) test -count=1 -timeout $(E2E_TIMEOUT) -run 'TestFailover|TestAPIServerOutage' -v ./test/e2e/faults/

CHAOS_EC2_TESTS ?= TestEC2ThrottlingBacksOff
chaos-ec2: ## EC2 fault e2e tests (throttled 60 s, then 2 s a call), figures in the log
	TAILOR_CHAOS=1 $(GO) test -count=1 -timeout $(E2E_TIMEOUT) -run '^($(CHAOS_EC2_TESTS))$$' -v ./test/e2e/faults/

# The interruption storm: STORM_NODES nodes, as many SQS notices at 50 a second (500
# in 10 s), a tenth duplicated and a tenth for unknown instances. make test runs it with 20.
STORM_NODES ?= 500
chaos-storm: ## interruption storm e2e of 500 nodes (STORM_NODES=500), figures in the log
	TAILOR_CHAOS=1 TAILOR_STORM_NODES=$(STORM_NODES) $(GO) test -count=1 -timeout 90m -run '^TestInterruptionStorm$$' -v ./test/e2e/faults/

SEEDS ?= 100
FIRST ?= 1000
JOBS ?= 2

# The chaos day: Tailor restarted at seeded points of a scripted day; its regression seeds, then
# SEEDS seeds from FIRST, one at a time (about a minute each); make chaos runs 10. OUT= keeps the log.
CHAOS_SEEDS ?= 10
chaos-day: ## the chaos day: its regression seeds, then SEEDS seeds (default 10) from FIRST; the failing seeds are listed
	SEEDS=$(if $(filter command line environment,$(origin SEEDS)),$(SEEDS),$(CHAOS_SEEDS)) FIRST=$(FIRST) OUT=$(OUT) GO=$(GO) ./hack/chaos-day.sh

# Seeds whose drift a PodDisruptionBudget holds for good (6000, 2580, 2584, 6004; 150-270 s each,
# too long for the regression set): the log names the budget; see docs/design/workload-harness.md.
# Replay: HARNESS_SEEDS=6000,6004,2580,2584 go test -count=1 -run TestWorkloadHarness -v ./test/harness/
harness: ## the workload harness over SEEDS generated scenarios from FIRST, in JOBS processes; failing seeds' manifests and the logs go to OUT
	SEEDS=$(SEEDS) FIRST=$(FIRST) JOBS=$(JOBS) OUT=$(OUT) GO=$(GO) ./hack/harness.sh

run: ## the sandbox with examples/: a cluster, a simulated fleet and Tailor in one process
	$(GO) run ./cmd/tailor sandbox --apply examples/

bench: ## benchmarks into bench.txt (compare two runs with benchstat), then bench-report.md: each figure against its target
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./pkg/... | tee bench.txt
	$(GO) test -run '^$$' -bench Burst -benchtime 1x -count 5 ./test/e2e/provisioning/ | grep -E '^(Benchmark|goos|goarch|pkg|cpu|ok)' | tee -a bench.txt
	$(GO) test -run '^$$' -bench SchedulingThroughput -benchtime 1x -count 2 -timeout 90m ./test/schedperf/ | grep -E '^(Benchmark|goos|goarch|pkg|cpu|ok|schedperf:)' | tee -a bench.txt
	$(GO) test -run '^$$' -bench SchedulerMemory -benchtime 1x -count 1 -timeout 240m ./test/schedperf/ | grep -E '^(Benchmark|goos|goarch|pkg|cpu|ok|schedperf:)' | tee -a bench.txt
	$(GO) run ./hack/benchreport bench.txt | tee bench-report.md

# The fleet at scale: a Deployment with a PodDisruptionBudget scaled to SCALE_PODS pods on
# small nodes (four a node), then down to a tenth, in the sandbox. The whole log (the API server's
# too) goes to bench-scale.log; bench.txt gets the figures and the run's fleetscale: lines.
# One process holds the heaps of the API server, etcd, kwok, the controllers and Tailor, and its
# collector took a sixth of the CPU at 4,000 pods: GOGC=400 under a 12 GiB memory limit, unless
# set (docs/performance.md, the fleet at scale).
SCALE_PODS ?= 20000
SCALE_GOGC ?= 400
SCALE_GOMEMLIMIT ?= 12GiB
bench-scale: ## the fleet at scale (SCALE_PODS=20000 pods, about 5,000 nodes, then a tenth): time to Running and to consolidated, peak memory, tailor-scheduler's requests/s; appended to bench.txt, then bench-report.md
	GOGC=$(SCALE_GOGC) GOMEMLIMIT=$(SCALE_GOMEMLIMIT) TAILOR_SCALE_PODS=$(SCALE_PODS) $(GO) test -run '^$$' -bench '^BenchmarkFleetScale$$' -benchtime 1x -count 1 -timeout 240m ./test/e2e/provisioning/ > bench-scale.log 2>&1; \
		status=$$?; grep -E '^(Benchmark|goos|goarch|pkg|cpu|ok|fleetscale:)' bench-scale.log | tee -a bench.txt; exit $$status
	$(GO) run ./hack/benchreport bench.txt | tee bench-report.md

GENERATED := pkg/apis manifests/crds charts/tailor/crds pkg/generated docs/reference/api.md

generate: ## deepcopy, CRDs, the clientset, listers and informers, and docs/reference/api.md from the API types
	./hack/generate.sh

# git diff misses a generated file that is new (untracked), so git status is asked as well.
verify-generate: generate ## fails if generated files are stale
	git diff --exit-code -- $(GENERATED)
	@test -z "$$(git status --porcelain -- $(GENERATED))" || { git status --short -- $(GENERATED); echo "generated files are not committed: run make generate and commit"; exit 1; }

# Supply-chain hygiene: the module cache matches go.sum, every tool the build runs is pinned (a
# `go run` of a remote module names its version, never @latest; nothing is installed with go
# install; a workflow's action is named by commit), and the generated files are current.
verify: ## go mod verify, every go run of a tool and every action pinned, then verify-generate
	$(GO) mod verify
	@! grep -nE 'go run [^ ]*@latest|go[ ]install ' Makefile hack/*.sh .ci/run .github/workflows/*.yml || { echo "a tool above is not pinned: name its version (go run module@vX.Y.Z)"; exit 1; }
	@! grep -nE '^[ -]*uses: ' .github/workflows/*.yml | grep -vE 'uses: [^ @]+@[0-9a-f]{40}( |$$)' || { echo "an action above is not pinned: name its commit (uses: owner/action@SHA # vX.Y.Z)"; exit 1; }
	$(MAKE) verify-generate

# EC2's published facts (pkg/aws/ec2facts) are extracted from a copy of
# github.com/aws/karpenter-provider-aws, which a fresh clone and CI do not have: so not part of
# make generate. The snapshot is committed; this target rewrites it and runs its checks.
KARPENTER_AWS_REPO ?=
EC2FACTS_COMMIT ?= HEAD
ec2facts: ## rewrite pkg/aws/ec2facts from a checkout or bare clone of aws/karpenter-provider-aws (KARPENTER_AWS_REPO=path, EC2FACTS_COMMIT=HEAD), then test it
	@test -n "$(KARPENTER_AWS_REPO)" || { echo "make ec2facts: set KARPENTER_AWS_REPO to a checkout or bare clone of github.com/aws/karpenter-provider-aws" >&2; exit 2; }
	@git -C "$(KARPENTER_AWS_REPO)" rev-parse --git-dir >/dev/null 2>&1 || { echo "make ec2facts: KARPENTER_AWS_REPO=$(KARPENTER_AWS_REPO) is not a git repository" >&2; exit 2; }
	$(GO) run ./hack/ec2facts -repo "$(KARPENTER_AWS_REPO)" -commit "$(EC2FACTS_COMMIT)"
	KARPENTER_AWS_REPO="$(KARPENTER_AWS_REPO)" EC2FACTS_COMMIT="$(EC2FACTS_COMMIT)" $(GO) test -count=1 ./hack/ec2facts/ ./pkg/aws/ec2facts/...
	$(GO) test -count=1 -run 'TestConformance|TestRecordedAnswers|TestPublishedRegionalPrices' ./pkg/aws/

chart-lint: ## helm lint of charts/tailor, through Helm's Go SDK
	$(GO) test -count=1 -run TestChartLint ./charts/

lint: ## golangci-lint over every package
	$(GOLANGCI_LINT) run ./...

# make image: the version, revision and time come from git, so one commit gives one set of
# digests. Override any of them, e.g. `make image VERSION=v0.3.0 IMAGE=$$REGISTRY/tailor-scheduler`.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE ?= tailor-scheduler
PLATFORMS ?= linux/amd64,linux/arm64
IMAGE_OUT ?= bin/image
IMAGE_FLAGS = --repository $(IMAGE) --version $(VERSION) --revision "$(REVISION)" \
	--source-date-epoch $(SOURCE_DATE_EPOCH) --platforms $(PLATFORMS) --out $(IMAGE_OUT)
image: ## tailor-scheduler for PLATFORMS as an OCI layout and docker tarballs in IMAGE_OUT (bin/image/), then verified
	$(GO) run ./hack/image build --go $(GO) $(IMAGE_FLAGS) ./cmd/scheduler
	$(GO) run ./hack/image verify $(IMAGE_FLAGS)

# Releases (docs/development.md#releases): the image above, the chart at the release's version, an
# SBOM, all signed. The tools run with go run at a pinned version: Tailor does not import them,
# so they stay out of go.mod. HELM is the Helm of go.mod, whose Go SDK packages the chart.
COSIGN ?= $(GO) run github.com/sigstore/cosign/v3/cmd/cosign@v3.1.3
CYCLONEDX_GOMOD ?= $(GO) run github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0
HELM ?= $(GO) run helm.sh/helm/v4/cmd/helm@v4.2.4
ACTIONLINT ?= $(GO) run github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
# A release's version is its tag, v + a semantic version; on an untagged commit the dry run
# takes a test version.
RELEASE_VERSION ?= $(shell git describe --tags --match 'v[0-9]*' 2>/dev/null || echo v0.0.0-dryrun)
RELEASE_OUT ?= bin/release
SBOM = $(RELEASE_OUT)/tailor-scheduler.cdx.json
RELEASE_FLAGS = --version $(RELEASE_VERSION) --out $(RELEASE_OUT) --image-dir $(IMAGE_OUT) --sbom $(SBOM) \
	--cosign '$(COSIGN)' --helm '$(HELM)'

actionlint: ## the GitHub Actions workflows through a pinned actionlint
	$(ACTIONLINT) .github/workflows/*.yml

# The modules cmd/scheduler links, from the module graph (go list), not read back from a binary,
# with the Go standard library's version for vulnerability scanners. The graph is the host's
# platform's: releases are made on linux, and the dry run and the workflow check the SBOM against
# each image platform's binary before anything is signed.
sbom: ## the CycloneDX SBOM of tailor-scheduler from the Go module graph, into RELEASE_OUT
	$(GO) run ./hack/release sbom --cyclonedx '$(CYCLONEDX_GOMOD)' --sbom $(SBOM)

release-dry-run: ## a release of RELEASE_VERSION without pushing: actionlint, image, chart, SBOM, signed with a throwaway key into a loopback registry and verified, into bin/release
	$(MAKE) actionlint
	$(MAKE) image VERSION=$(RELEASE_VERSION)
	$(MAKE) sbom
	$(GO) run ./hack/release dry-run $(RELEASE_FLAGS)

# The release workflow's last step, after make image IMAGE=$$REGISTRY/tailor-scheduler and make
# sbom: pushes the image and the chart to REGISTRY and signs them keyless as SIGNER_IDENTITY.
release-publish: ## CI only: push RELEASE_VERSION's image and chart to REGISTRY, sign keyless as SIGNER_IDENTITY, verify
	@test -n "$(REGISTRY)" && test -n "$(SIGNER_IDENTITY)" || { echo "make release-publish: set REGISTRY and SIGNER_IDENTITY (the release workflow does)" >&2; exit 2; }
	$(GO) run ./hack/release publish $(RELEASE_FLAGS) --registry '$(REGISTRY)' --identity '$(SIGNER_IDENTITY)'
