# make test: install what the tests need (once), then run every check CI runs.
# Run as root: the tests build veth pairs in throwaway network namespaces.

GO          ?= go
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
DEBS        := libdpdk-dev libibverbs-dev libpcap-dev pkg-config ethtool dpdk-dev xdp-tools tcpdump curl netsniff-ng gcc
REQUIRED    := PACKETIO_CONFORM_REQUIRED=1
# Every build tag at once: with the untagged run, every file is checked
# (no file is built only without dpdk or mlx5).
ALLTAGS     := dpdk mlx5 packetio_checked pcap

.PHONY: test deps lint unit checked tagged netstack metrics fuzz hello benchcheck bench

test: deps lint unit checked tagged netstack metrics benchcheck fuzz

# Debian packages the cgo backends build against and the tools the tests
# drive (xdp-loader, tcpdump, curl, trafgen and netsniff-ng, cc). Installed
# only if missing.
deps:
	@missing=""; for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

lint:
	@bad=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$bad" ]; then echo "gofmt would change:"; echo "$$bad"; exit 1; fi
	@bin=$$(git ls-files 2>/dev/null | while read -r f; do [ -f "$$f" ] && head -c4 "$$f" | grep -q ELF && echo "$$f"; done); \
	if [ -n "$$bin" ]; then echo "built programs are tracked (remove them; .gitignore names them):"; echo "$$bin"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags '$(ALLTAGS)' ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(STATICCHECK) -tags '$(ALLTAGS)' ./...

# Every package under the race detector, skips turned into failures. The
# pcap tag builds the comparison of pcapfilter with libpcap (cgo, tests
# only: the packages themselves stay pure Go, which the last line proves).
unit:
	$(REQUIRED) $(GO) test -race -tags pcap -count=1 ./...
	CGO_ENABLED=0 $(GO) build ./afxdp/... ./afpacket/... ./pipe/...

# The pool's double-return detection and everything that rests on it.
checked:
	$(REQUIRED) $(GO) test -tags 'packetio_checked pcap' -count=1 ./...

# The cgo backends, built and tested behind their tags.
tagged:
	$(GO) build -tags dpdk ./...
	$(GO) build -tags mlx5 ./...
	$(REQUIRED) $(GO) test -race -tags dpdk -count=1 ./dpdk/...
	$(REQUIRED) $(GO) test -tags 'dpdk packetio_checked' -count=1 ./dpdk/...
	$(REQUIRED) $(GO) test -tags dpdk -count=1 ./examples/internal/backend/
	$(REQUIRED) $(GO) test -tags mlx5 -count=1 ./mlx5/...

# netstack is its own module (gVisor stays out of programs that only move
# frames), so the root ./... does not reach it.
netstack:
	cd netstack && bad=$$(gofmt -l .) && if [ -n "$$bad" ]; then echo "gofmt would change:"; echo "$$bad"; exit 1; fi
	sh netstack/third_party/gvisor/check.sh
	cd netstack && $(GO) vet ./...
	cd netstack && $(GO) vet -tags '$(ALLTAGS)' ./...
	cd netstack && $(GO) run $(STATICCHECK) ./...
	cd netstack && $(GO) run $(STATICCHECK) -tags '$(ALLTAGS)' ./...
	cd netstack && $(REQUIRED) $(GO) test -race -count=1 ./...
	cd netstack && $(REQUIRED) $(GO) test -tags packetio_checked -count=1 ./...
	cd netstack && $(REQUIRED) $(GO) test -tags dpdk -count=1 -run 'Veth|DPDK' ./...

# metrics is its own module too (the Prometheus client stays out of
# programs that only move frames). Its benchmarks run once, its fuzz
# target for a bounded count.
metrics:
	cd metrics && bad=$$(gofmt -l .) && if [ -n "$$bad" ]; then echo "gofmt would change:"; echo "$$bad"; exit 1; fi
	cd metrics && $(GO) vet ./...
	cd metrics && $(GO) vet -tags packetio_checked ./...
	cd metrics && $(GO) run $(STATICCHECK) ./...
	cd metrics && $(REQUIRED) $(GO) test -race -count=1 ./...
	cd metrics && $(REQUIRED) $(GO) test -tags packetio_checked -count=1 ./...
	cd metrics && $(REQUIRED) $(GO) test -run XXX -bench . -benchtime 1x ./...
	cd metrics && $(REQUIRED) $(GO) test -run XXX -fuzz '^FuzzTextMatchesCollector$$' -fuzztime 2000x -fuzzminimizetime $(FUZZMIN) -parallel 1 .

# Every benchmark runs once (-benchtime 1x): CI checks that they run, never
# how fast (that is `make bench`, on a quiet machine).
benchcheck:
	$(REQUIRED) $(GO) test -run XXX -bench . -benchtime 1x ./...
	$(REQUIRED) $(GO) test -run XXX -bench . -benchtime 1x -tags dpdk ./dpdk/...

# The packet-rate numbers: the datapath benchmarks, BENCHCOUNT runs each,
# interleaved (one -count per loop round, so the runs of one benchmark are
# spread over the whole time), then the sweep of every backend beside the C
# references (C AF_XDP, testpmd, trafgen, netsniff-ng) on the same veth in
# the same run. Root, a quiet machine, about 20 minutes. Results go to
# BENCHOUT; nothing else on the host changes.
BENCHCOUNT ?= 5
BENCHN     ?= 2000000x
BENCHOUT   ?= /tmp/packetio-bench
BENCHDEBS  := dpdk netsniff-ng tcpdump libxdp-dev libbpf-dev gcc
bench: deps
	@missing=""; for p in $(BENCHDEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	mkdir -p $(BENCHOUT)
	for i in $$(seq $(BENCHCOUNT)); do \
		$(REQUIRED) $(GO) test -run XXX -bench . -benchtime $(BENCHN) -count 1 ./afxdp/ ./afxdp/xdp/ ./afpacket/ || exit 1; \
		$(REQUIRED) $(GO) test -run XXX -bench . -benchtime $(BENCHN) -count 1 -tags dpdk ./dpdk/ || exit 1; \
	done | tee $(BENCHOUT)/bench.txt
	$(GO) run -tags dpdk ./examples/sweep -passes $(BENCHCOUNT) -out $(BENCHOUT)/sweep

# Bounded fuzz runs of the compilers, beyond their seed corpora (which the
# unit runs cover). Every input of a BPF-loading target loads a program:
# one worker (-parallel 1) and a paced load rate, because a flood of
# program loads and frees once deadlocked this kernel's BPF allocator.
# Budgets are execution counts, not durations: a -fuzztime duration races
# the fuzz coordinator's own deadline (golang/go#75804, unfixed in go1.26)
# and fails now and then with "context deadline exceeded" and no input.
# Minimising a new interesting input is bounded too (the default is 60s,
# long enough to stall a run). Each budget is 10-30s here.
FUZZMIN ?= 3s
fuzz:
	$(REQUIRED) $(GO) test -run XXX -fuzz '^FuzzSteering$$' -fuzztime 1500x -fuzzminimizetime $(FUZZMIN) -parallel 1 ./afxdp/
	$(REQUIRED) $(GO) test -run XXX -fuzz '^FuzzOptimize$$' -fuzztime 100000x -fuzzminimizetime $(FUZZMIN) -parallel 1 ./filter/
	$(REQUIRED) $(GO) test -run XXX -fuzz '^FuzzDifferential$$' -fuzztime 300x -fuzzminimizetime $(FUZZMIN) -parallel 1 ./filter/bpfmatch/
	$(REQUIRED) $(GO) test -run XXX -fuzz '^FuzzDifferential$$' -fuzztime 300x -fuzzminimizetime $(FUZZMIN) -parallel 1 ./filter/cbpf/
	$(REQUIRED) $(GO) test -run XXX -fuzz '^FuzzParse$$' -fuzztime 75000x -fuzzminimizetime $(FUZZMIN) -parallel 1 ./filter/pcapfilter/
	$(REQUIRED) $(GO) test -tags pcap -run XXX -fuzz '^FuzzLibpcap$$' -fuzztime 75000x -fuzzminimizetime $(FUZZMIN) -parallel 1 ./filter/pcapfilter/
	$(REQUIRED) $(GO) test -tags packetio_checked -run XXX -fuzz '^FuzzDescSequence$$' -fuzztime 20000x -fuzzminimizetime $(FUZZMIN) -parallel 1 ./pipe/
	$(REQUIRED) $(GO) test -run XXX -fuzz '^FuzzOptions$$' -fuzztime 50000x -fuzzminimizetime $(FUZZMIN) -parallel 1 ./afxdp/
	$(REQUIRED) $(GO) test -run XXX -fuzz '^FuzzSumAfter$$' -fuzztime 20000x -fuzzminimizetime $(FUZZMIN) -parallel 1 ./internal/csum/
	$(REQUIRED) $(GO) test -run XXX -fuzz '^FuzzLookup$$' -fuzztime 50000x -fuzzminimizetime $(FUZZMIN) -parallel 1 ./examples/internal/forward/

hello:
	$(GO) run ./examples/hello
