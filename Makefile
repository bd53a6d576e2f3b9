# CoordsCore — build and test entry points. `make test` is what CI runs (.ci/run).
SWIFT ?= swift
SWIFT_TEST_FLAGS ?=

.PHONY: all deps build test test-swift test-tsan clean help

all: build

help:
	@echo "make deps    install missing system packages (libsodium-dev, liblmdb-dev, pkg-config) with apt-get"
	@echo "make build   build the library and tools (debug)"
	@echo "make test    everything CI checks: Swift tests, channel tests under ThreadSanitizer (runs deps first)"
	@echo "make clean   remove build output"

deps:
	@scripts/deps.sh

build: deps
	$(SWIFT) build

test: deps test-swift test-tsan

test-swift:
	$(SWIFT) test $(SWIFT_TEST_FLAGS)

# The concurrency-heavy suites again under ThreadSanitizer, in their own build folder so the
# normal build stays cached.
test-tsan:
	$(SWIFT) test --sanitize=thread --scratch-path .build-tsan --filter 'ChannelStressTests|ChannelConformanceTests'

clean:
	rm -rf .build .build-* .build_*
