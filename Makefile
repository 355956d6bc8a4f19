# jazz: two commands do everything on a fresh machine:
#   make demo   run a replayed agent end to end on the embedded defaults
#   make test   format check, the race-enabled test suite and vet (all checks)

GO      ?= go
BIN     := bin/jazz
DEMO_HOME ?= $(CURDIR)/.demo-home

.PHONY: all build demo test vet fmt-check cross bench bench-go bench-scale cluster clean

all: build

# CGO_ENABLED=0 links a static binary: no dynamic loader, no glibc
# start-up (its CPUID probing traps to the hypervisor in a VM), no
# pthreads. That was ~8% of a one-turn run's CPU (perf, interleaved) and
# 50-100 page faults. jazz's only cgo users are net's and os/user's
# optional libc paths; the pure Go resolver and user lookup read
# /etc/resolv.conf, /etc/hosts and /etc/passwd instead. `make test` keeps
# cgo: -race needs it. CGO_ENABLED=1 make build gives the libc build.
CGO_ENABLED ?= 0
build:
	CGO_ENABLED=$(CGO_ENABLED) $(GO) build -o $(BIN) ./cmd/jazz

# A replayed model lists and reads files and answers, no key needed; the
# JSON envelope is printed on stdout.
demo: build
	@rm -rf $(DEMO_HOME) && mkdir -p $(DEMO_HOME)
	@JAZZ_HOME=$(DEMO_HOME) ./$(BIN) agent create --name demo \
		--model replay/$(CURDIR)/examples/demo/replay.json --tools ls,read_file >/dev/null
	@JAZZ_HOME=$(DEMO_HOME) ./$(BIN) run --agent demo --json --events tools "What is this project?"

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# Each package's line is printed as it finishes (internal/testprogress),
# and after 20 s of silence a line names what is still running (or that
# the build is still going: a cold cache compiles the tree for ~3 min).
#   -vet=all    every check `go vet` runs, done inside go test's own build
#               graph: it reuses the race-built dependencies and overlaps the
#               test runs, where a separate `go vet ./...` first was a ~60 s
#               serial phase compiling the tree once more. Packages without
#               test files are built and vetted too (a bad Printf in
#               internal/faults fails the run as "[build failed]").
#   -trimpath   (in GOFLAGS, so e2e's own `go build` of jazz has it too)
#               no checkout directory in the build cache's keys: a clean
#               clone reuses every package another checkout on this machine
#               (a worktree, the last CI clone) already built from the same
#               sources, where each new directory compiled the whole tree
#               again. File names in stacks read github.com/jazz-run/jazz/...
#   -p 4        a test binary that waits (on processes, servers, timers)
#               holds one of go test's -p slots as a compile does; with
#               the default (2 on this machine) the long e2e run alone
#               halves how fast the rest is built.
#   -parallel 4 e2e's tests are t.Parallel and mostly wait on jazz.
#   -ldflags=-w test binaries without DWARF link in ~60% of the time (a
#               panic's or a race report's stack needs none); ~75 links.
#   GORACE      a race-enabled binary sleeps a second before exit 0
#               (atexit_sleep_ms=1000): every test binary, and every
#               helper process the tests start from one.
#   JAZZ_TEST_HANDOFFS  a build of internal/handoffs without -race, which
#               the test binaries start as the isolate trampoline, the shell
#               runner and the child reaper in place of themselves: the race
#               runtime's setup made each of those starts cost ~50 ms of CPU,
#               and with thousands of sandboxed git and shell calls they were
#               half the suite's CPU (isolate.HandoffBinary).
# TESTPKGS lists the longest-running packages first: go test builds and
# starts packages in the order given, and one of these started last is
# the suite's tail while everything else is done (tools/gittools alone
# ran its 60 s after the rest had ended). A package here that is renamed
# or removed fails the run loudly: update the list.
# TESTJSON=file keeps go test's whole -json stream there, for finding
# where the time went (testprogress names the slowest tests).
TESTFLAGS ?= -race -count=1 -timeout 15m -p 4 -parallel 4 -vet=all -ldflags=-w
TESTPKGS  ?= ./e2e/... ./tools/gittools/... ./tools/writetools/... ./shellrun/... \
	./shellguard/... ./workerpool/... ./...
TESTJSON  ?= /dev/null
HANDOFFS  := bin/test-handoffs
test: fmt-check
	GOFLAGS="$${GOFLAGS:+$$GOFLAGS }-trimpath" $(GO) build -o $(HANDOFFS) ./internal/handoffs
	GORACE="$${GORACE:+$$GORACE }atexit_sleep_ms=0" GOFLAGS="$${GOFLAGS:+$$GOFLAGS }-trimpath" \
		JAZZ_TEST_HANDOFFS="$(abspath $(HANDOFFS))" $(GO) test $(TESTFLAGS) -json $(TESTPKGS) | tee $(TESTJSON) | $(GO) run ./internal/testprogress

# Every platform jazz ships for must build: what needs Unix (process
# groups, descriptor-relative writes, flock) sits behind build tags with
# a fallback that fails closed.
CROSS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
cross:
	@for t in $(CROSS); do echo "build $$t"; \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build ./... || exit 1; done

# Benchmarks: Go benchmarks, then the CLI harness (wall time, peak RSS).
bench: build
	$(GO) test -p 1 -timeout 20m -run '^$$' -bench . -benchmem ./...
	$(GO) run ./bench/harness -bin $(BIN)

# Worker pools: 1, 2, 4 and 8 `jazz worker` processes on a local 3-node
# cluster; writes docs/bench-scale.md (table) and docs/bench-scale.png.
bench-scale: build
	$(GO) run ./bench/scale -bin $(BIN) -out docs

# A local 3-node NATS cluster (JetStream replicated) on 127.0.0.1 for
# trying worker pools by hand, in JAZZ_HOME (default ~/.jazz); Ctrl-C
# stops it.
cluster: build
	./$(BIN) bus cluster --nodes 3

clean:
	rm -rf bin $(DEMO_HOME)
