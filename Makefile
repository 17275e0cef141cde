# Mitrity governed shell. Run from the repository root: go.work makes every
# module addressable by its import path from here.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

MODULE := github.com/mitrity/mitrity
# Binaries, by module folder; each installs as bin/mitrity-<folder>.
BINS := gateway sidecar hook sandboxrun egressproxy
# Modules whose tests run under the race detector; e2e runs without it.
RACE_MODULES := govern admission gateway hook sidecar sandboxrun egressproxy
MODULES := $(RACE_MODULES) e2e
# pkgs turns module folders into import-path patterns: govern -> .../govern/...
pkgs = $(foreach m,$(1),$(MODULE)/$(m)/...)

MITRITY_VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# urfave_cli_no_docs drops the man-page generator (and its markdown
# parser's start-up work): the hook starts before every shell call.
GOFLAGS_BUILD := -trimpath -tags urfave_cli_no_docs -ldflags '-X main.version=$(MITRITY_VERSION)'
TEST_TIMEOUT := 20m

TOOLS_BIN := $(CURDIR)/.tools/bin
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(TOOLS_BIN)/staticcheck
# Touched after each install, so a version bump here reinstalls.
STATICCHECK_STAMP := $(CURDIR)/.tools/staticcheck-$(STATICCHECK_VERSION).stamp
# nfpm writes the .debs of make packages (packaging/build-debs).
NFPM_VERSION := v2.45.2
NFPM := $(TOOLS_BIN)/nfpm
NFPM_STAMP := $(CURDIR)/.tools/nfpm-$(NFPM_VERSION).stamp

.PHONY: all build test fuzz bench lint cross packages clean FORCE
all: build

build: $(addprefix bin/mitrity-,$(BINS)) bin/mitrity-sandboxinit

bin/mitrity-%: FORCE
	go build $(GOFLAGS_BUILD) -o $@ $(MODULE)/$*

# mitrity-sandboxrun and the sandbox's first process start on every governed
# run: static (no dynamic loader, no libc; neither needs cgo), which spares
# each start its relocations. sandboxinit is a package of the sandboxrun
# module, a small program of its own.
bin/mitrity-sandboxrun: FORCE
	CGO_ENABLED=0 go build $(GOFLAGS_BUILD) -o $@ $(MODULE)/sandboxrun

bin/mitrity-sandboxinit: FORCE
	CGO_ENABLED=0 go build $(GOFLAGS_BUILD) -o $@ $(MODULE)/sandboxrun/sandboxinit

# The hook runs before every shell call an agent makes: static too.
bin/mitrity-hook: FORCE
	CGO_ENABLED=0 go build $(GOFLAGS_BUILD) -o $@ $(MODULE)/hook
# The three above, for make packages, which builds them the same way.
STATIC_BINS := sandboxrun sandboxinit hook

# One .deb per binary, for each of PKG_ARCHES, into dist/ (docs/install.md);
# the version is packaging/debversion's unless DEB_VERSION is set.
PKG_ARCHES ?= amd64 arm64
DIST ?= $(CURDIR)/dist
packages: $(NFPM_STAMP)
	NFPM=$(NFPM) MITRITY_VERSION=$(MITRITY_VERSION) STATIC_BINS="$(STATIC_BINS)" DIST=$(DIST) ARCHES="$(PKG_ARCHES)" \
		packaging/build-debs

$(NFPM_STAMP):
	GOBIN=$(TOOLS_BIN) go install github.com/goreleaser/nfpm/v2/cmd/nfpm@$(NFPM_VERSION)
	touch $@

# macOS hosts run an agent framework with mitrity-hook in front of its shell
# tool, and the gateway it talks to (docs/frameworks.md, --os darwin): both
# are built for darwin/arm64 and darwin/amd64 into bin/darwin-<arch>/.
# mitrity-sandboxrun and mitrity-sandboxinit build the bubblewrap sandbox,
# Linux only: not built for darwin (on macOS no kernel sandbox is
# implemented yet, so a governed command there is denied
# sandbox_unavailable, or runs in mode none where a profile allows it);
# sidecar and egressproxy are not shipped for it either. Every package and
# test of every module still compiles for darwin (go vet), so Linux-only
# code outside a _linux.go file fails here rather than on a Mac.
CROSS_BINS := gateway hook
CROSS_ARCHS := arm64 amd64
cross:
	for arch in $(CROSS_ARCHS); do \
		for b in $(CROSS_BINS); do \
			GOOS=darwin GOARCH=$$arch CGO_ENABLED=0 go build $(GOFLAGS_BUILD) -o bin/darwin-$$arch/mitrity-$$b $(MODULE)/$$b; \
		done; \
	done
	for m in $(MODULES); do (cd $$m && GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 go vet ./...); done

# Unit tests (with -race) and e2e (against bin/) both run; either failing
# fails the target, after both have printed their results.
test:
	scripts/deps
	$(MAKE) --no-print-directory build
	rc=0; \
	GOVERN_REQUIRE_SANDBOX=1 go test -race -count=1 -timeout $(TEST_TIMEOUT) $(call pkgs,$(RACE_MODULES)) || rc=1; \
	$(MAKE) --no-print-directory fuzz || rc=1; \
	insp=$(CURDIR)/e2e/.tools/node_modules/.bin/mcp-inspector; [ -x "$$insp" ] || insp=; \
	rm -rf $(CURDIR)/dist/test; $(MAKE) --no-print-directory packages DIST=$(CURDIR)/dist/test || rc=1; \
	GOVERN_REQUIRE_SANDBOX=1 MITRITY_BIN=$(CURDIR)/bin MITRITY_DIST=$(CURDIR)/dist/test MITRITY_MCP_INSPECTOR=$$insp go test -count=1 -timeout $(TEST_TIMEOUT) $(call pkgs,e2e) || rc=1; \
	exit $$rc

# Fuzz targets of the protocol surfaces (serve --stdio's framing, the MCP
# HTTP endpoint, the admission socket) and of the parsers that judge what
# an agent or a file sends (the shell analyzer, the config and policy, the
# hook payloads, the credential redactor, the own-path scrubber), each for
# FUZZTIME from its seed
# corpus in testdata/fuzz; make test runs them. A failure leaves the input
# in testdata/fuzz/<target>/ for the next run to replay; scripts/fuzz says
# which one failure (a Go 1.26 coordinator race) it retries once.
FUZZTIME ?= 10s
FUZZ_TARGETS := govern/mcpserver:FuzzStdioFraming govern/mcpserver:FuzzCheckMessage govern/mcpserver:FuzzHTTPEndpoint \
	admission:FuzzAdmitRequest admission:FuzzRedeemRequest \
	govern/shell:FuzzAnalyze govern/shell:FuzzAnalyzeCredentials govern/config:FuzzLoad \
	govern/policy:FuzzParse hook/framework:FuzzParse govern/secretscan:FuzzFeed \
	govern/dlp:FuzzCredentialStream govern/ownfiles:FuzzScrub govern/egress:FuzzParseEntry \
	govern/secretscan:FuzzSamplingAsReference govern/upstream:FuzzClean govern/shell:FuzzKernelShebang
fuzz:
	@scripts/fuzz $(MODULE) $(FUZZTIME) $(FUZZ_TARGETS)

# Benchmarks of every module, six runs each, for benchstat. The e2e ones
# drive bin/ and need what scripts/deps installs (bubblewrap above all:
# without it an upstream is withheld and its benchmark fails).
bench:
	scripts/deps
	$(MAKE) --no-print-directory build
	MITRITY_BIN=$(CURDIR)/bin go test -run '^$$' -bench . -benchmem -count 6 $(call pkgs,$(MODULES)) | tee bench.txt

lint: $(STATICCHECK_STAMP)
	@unformatted=$$( { git ls-files -co --exclude-standard -- '*.go' 2>/dev/null || find . -name '*.go' -not -path './.*'; } | xargs -r gofmt -l); \
	if [ -n "$$unformatted" ]; then echo "gofmt -l: these files need gofmt -w:"; echo "$$unformatted"; exit 1; fi
	go vet $(call pkgs,$(MODULES))
	$(STATICCHECK) $(call pkgs,$(MODULES))

$(STATICCHECK_STAMP):
	GOBIN=$(TOOLS_BIN) go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	touch $@

clean:
	rm -rf bin .tools dist bench.txt

FORCE:
