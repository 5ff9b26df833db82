# Needs only Go and make: tools run through `go run`, nothing is installed.
GO          ?= go
GOFMT       := $(shell $(GO) env GOROOT)/bin/gofmt
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# The race detector needs cgo; go env reports CGO_ENABLED=0 without a C compiler.
RACE        := $(if $(filter 1,$(shell $(GO) env CGO_ENABLED)),-race)

.PHONY: build test diagram-check lint diagram bench demo

build:
	$(GO) build ./...

test:
	$(GO) vet ./...
	$(GO) test $(RACE) -count=1 -timeout 600s ./...
	@$(MAKE) --no-print-directory diagram-check

# Regenerate the diagrams into a temporary directory and diff with diagrams/.
diagram-check:
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(GO) run ./cmd/mcpkeep diagram -o "$$tmp" && \
	if diff -r diagrams "$$tmp" >/dev/null; then echo "diagrams/ matches fsm.Table"; \
	else diff -ru diagrams "$$tmp" | head -40; echo "diagrams/ is stale: run make diagram" >&2; exit 1; fi

lint:
	@out=$$($(GOFMT) -l .); if [ -n "$$out" ]; then echo "not gofmt-ed:" >&2; echo "$$out" >&2; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

diagram:
	$(GO) run ./cmd/mcpkeep diagram -o diagrams

# The benchmark suite (internal/benchsuite): each figure beside its
# comparison, measured in one run; prints the table, writes docs/benchmarks.md.
bench:
	$(GO) run ./internal/benchsuite/cmd/benchsuite -o docs/benchmarks.md

demo:
	$(GO) run ./cmd/mcpkeep demo
