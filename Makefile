# Needs only Go and make: tools run through `go run`, nothing is installed.
GO          ?= go
GOFMT       := $(shell $(GO) env GOROOT)/bin/gofmt
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# The race detector needs cgo; go env reports CGO_ENABLED=0 without a C compiler.
RACE        := $(if $(filter 1,$(shell $(GO) env CGO_ENABLED)),-race)

.PHONY: build test lint diagram bench demo

# Builds every package, and the release binary bin/mcpkeep (stripped of
# symbol tables and DWARF, paths trimmed: 9.5 MB instead of 13.8 MB).
build:
	$(GO) build ./...
	$(GO) build -trimpath -ldflags "-s -w" -o bin/mcpkeep ./cmd/mcpkeep

test:
	$(GO) vet ./...
	$(GO) test $(RACE) -count=1 -timeout 600s ./...

lint:
	@out=$$($(GOFMT) -l .); if [ -n "$$out" ]; then echo "not gofmt-ed:" >&2; echo "$$out" >&2; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# Every committed rendering of fsm.Table: diagrams/ and README.md's mermaid
# block. The drift test (internal/cmd/diagrams, part of make test) fails
# when they are stale.
diagram:
	$(GO) run ./internal/cmd/diagrams -o diagrams -readme README.md

# The benchmark suite (internal/benchsuite): each figure beside its
# comparison, measured in one run; prints the table, writes docs/benchmarks.md.
bench:
	$(GO) run ./internal/benchsuite/cmd/benchsuite -o docs/benchmarks.md

demo:
	$(GO) run ./cmd/mcpkeep demo
