# make test: install what the tests need (once), then run every check CI runs.
# Run as root: the tests build veth pairs in throwaway network namespaces.

GO          ?= go
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
DEBS        := libdpdk-dev libibverbs-dev libpcap-dev pkg-config
REQUIRED    := PACKETIO_CONFORM_REQUIRED=1

.PHONY: test deps lint unit checked tagged hello

test: deps lint unit checked tagged

# Debian packages the cgo backends build against. Installed only if missing.
deps:
	@missing=""; for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

lint:
	@bad=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$bad" ]; then echo "gofmt would change:"; echo "$$bad"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags dpdk ./...
	$(GO) vet -tags mlx5 ./...
	$(GO) vet -tags packetio_checked ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(STATICCHECK) -tags dpdk ./...
	$(GO) run $(STATICCHECK) -tags mlx5 ./...

# Every package under the race detector, skips turned into failures.
unit:
	$(REQUIRED) $(GO) test -race -count=1 ./...

# The pool's double-return detection and everything that rests on it.
checked:
	$(REQUIRED) $(GO) test -tags packetio_checked -count=1 ./...

# The cgo backends, built and tested behind their tags.
tagged:
	$(GO) build -tags dpdk ./...
	$(GO) build -tags mlx5 ./...
	$(REQUIRED) $(GO) test -race -tags dpdk -count=1 ./dpdk/...
	$(REQUIRED) $(GO) test -tags 'dpdk packetio_checked' -count=1 ./dpdk/...
	$(REQUIRED) $(GO) test -tags mlx5 -count=1 ./mlx5/...

hello:
	$(GO) run ./examples/hello
