# gitsync — the two commands a newcomer needs are `make demo` and `make test`.
GO ?= go
# The engine and the agent run under the race detector; the rest (CLI and demo
# tests drive built binaries, charts and examples only apply) run plain.
RACE_PKGS := ./source/... ./diff/... ./apply/... ./inventory/... ./health/... ./controller/...
RACE_PATTERN := /(source|diff|apply|inventory|health|controller)(/|$$)

.PHONY: all build test testbin demo demo-down vet

all: build

## build: compile bin/gitsync
build:
	$(GO) build -o bin/gitsync ./cmd/gitsync

## testbin: build the control-plane binaries (etcd, kube-apiserver, ...) if missing
testbin:
	@hack/tools/build.sh >/dev/null

## test: build what is missing, then run every test against a real control plane
test: testbin
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 30m $(RACE_PKGS)
	$(GO) test -count=1 -timeout 40m $$($(GO) list ./... | grep -v -E '$(RACE_PATTERN)')

## e2e: the chart with the image on a real node (kubelet, containerd, kube-proxy; needs root), after make test
.PHONY: e2e
e2e: image
	@hack/tools/build.sh node >/dev/null
	$(GO) test -tags e2e -count=1 -timeout 20m ./e2e

## demo: local control plane + local Git repo + gitsync, end to end
demo: testbin build
	$(GO) build -o bin/demo ./hack/demo
	bin/demo up

## demo-down: stop what make demo started
demo-down:
	@if [ -x bin/demo ]; then bin/demo down; else echo "nothing to stop"; fi

## generate: deepcopy and the GitSync CRD from api/v1alpha1 (chart copy + embedded copy)
CONTROLLER_GEN ?= $(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0
.PHONY: generate
generate:
	$(CONTROLLER_GEN) object crd paths=./api/... output:crd:dir=charts/gitsync/crds
	cp charts/gitsync/crds/gitsync.dev_gitsyncs.yaml api/v1alpha1/crd/gitsync.dev_gitsyncs.yaml
