#!/usr/bin/env bash
# Installs the system packages CoordsCore needs, only when they are missing, and says what it did.
# Usage: scripts/deps.sh            everything the tests need too (`make deps`: make test and every test-* target)
#        scripts/deps.sh --build    only what building and `make demo` need (`make build`, lib, tools, demo):
#                                   no PostgreSQL, nginx, valgrind, shells or PyPI test tools on a
#                                   machine that only builds or watches the demo
set -euo pipefail
mode=all
[ "${1:-}" = "--build" ] && mode=build

packages_for_missing() {
    local missing=()
    command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
    if command -v pkg-config >/dev/null 2>&1; then
        pkg-config --exists libsodium || missing+=(libsodium-dev)
        pkg-config --exists lmdb || missing+=(liblmdb-dev)
    else
        missing+=(libsodium-dev liblmdb-dev)
    fi
    command -v cc >/dev/null 2>&1 || missing+=(gcc)
    command -v curl >/dev/null 2>&1 || missing+=(curl)  # the demo reads the relay's metrics with it
    if [ "$mode" = build ]; then
        echo "${missing[@]:-}"
        return
    fi
    command -v python3 >/dev/null 2>&1 || missing+=(python3)
    # The relay's multi-node tests start a real PostgreSQL (and nginx as the load balancer).
    ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
    command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
    command -v openssl >/dev/null 2>&1 || missing+=(openssl)  # the test server's TLS certificate
    command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)  # verifies deploy/systemd/coords-relay.service
    command -v readelf >/dev/null 2>&1 || missing+=(binutils)
    command -v prlimit >/dev/null 2>&1 || missing+=(util-linux)  # the hostile-relay suite limits the client's memory
    # make install points the installed tools at their bundled Swift runtime (RUNPATH $ORIGIN/…).
    command -v patchelf >/dev/null 2>&1 || missing+=(patchelf)
    # The instruction-count gate (make bench-check) runs under callgrind and includes its client requests.
    { command -v valgrind >/dev/null 2>&1 && [ -f /usr/include/valgrind/callgrind.h ]; } || missing+=(valgrind)
    # make install's man pages and completions are checked with groff/man, bash, zsh and fish.
    command -v groff >/dev/null 2>&1 || missing+=(groff-base)
    command -v man >/dev/null 2>&1 || missing+=(man-db)
    command -v col >/dev/null 2>&1 || missing+=(bsdextrautils)
    command -v zsh >/dev/null 2>&1 || missing+=(zsh)
    command -v fish >/dev/null 2>&1 || missing+=(fish)
    command -v zbarimg >/dev/null 2>&1 || missing+=(zbar-tools)  # an independent QR decoder reads our QR codes back
    # examples/host-loop.c (the one-wake host in C) performs its requests with libcurl.
    { command -v pkg-config >/dev/null 2>&1 && pkg-config --exists libcurl; } || missing+=(libcurl4-openssl-dev)
    # The JVM binding (bindings/jvm, scripts/jvm.sh): Java 17, JNA, JUnit 5, the JetBrains
    # nullability annotations Kotlin reads, and Kotlin's compiler for the usage check.
    command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
    [ -f /usr/share/java/jna.jar ] || missing+=(libjna-java)
    [ -f /usr/share/java/junit-platform-console-standalone.jar ] || missing+=(junit5)
    [ -f /usr/share/java/org.jetbrains.annotations-java8.jar ] || missing+=(libjetbrains-annotations-java)
    command -v kotlinc >/dev/null 2>&1 || missing+=(kotlin)
    # The failover suite (tests/ha): a Patroni cluster on etcd behind HAProxy, nodes in network namespaces.
    command -v patroni >/dev/null 2>&1 || missing+=(patroni)
    command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
    command -v etcdctl >/dev/null 2>&1 || missing+=(etcd-client)
    command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || missing+=(haproxy)
    command -v ip >/dev/null 2>&1 || missing+=(iproute2)
    command -v setpriv >/dev/null 2>&1 || missing+=(util-linux)
    # tests/e2e/test_lifecycle.py runs a host an hour behind with libfaketime.
    [ -f /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ] || [ -f /usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1 ] || missing+=(faketime)
    echo "${missing[@]:-}"
}

# From PyPI, installed when missing: pytest (the Python suites), mypy (the package is typed:
# mypy --strict on it and on its documented usage), schemathesis (holds
# docs/openapi.yaml against a live relay; brings jsonschema and PyYAML, which
# scripts/openapi-check.py uses too) and openapi-spec-validator (the spec itself is valid OpenAPI 3.1).
ensure_pytest() {
    if ! python3 -c "import pytest" >/dev/null 2>&1; then
        echo "deps: pytest missing — installing with pip"
        python3 -m pip install --quiet pytest || { echo "deps: error: pip could not install pytest" >&2; exit 1; }
    fi
    if ! python3 -c "import mypy" >/dev/null 2>&1; then
        echo "deps: mypy missing — installing with pip (make test-python type-checks the package with it)"
        python3 -m pip install --quiet mypy || { echo "deps: error: pip could not install mypy" >&2; exit 1; }
    fi
    if ! python3 -c "import schemathesis, jsonschema, yaml, openapi_spec_validator" >/dev/null 2>&1; then
        echo "deps: schemathesis or openapi-spec-validator missing — installing with pip"
        python3 -m pip install --quiet "schemathesis>=4,<5" openapi-spec-validator \
            || { echo "deps: error: pip could not install schemathesis and openapi-spec-validator" >&2; exit 1; }
    fi
    if ! python3 -c "import cryptography.x509" >/dev/null 2>&1; then
        echo "deps: cryptography missing — installing with pip (tests/e2e/test_https.py makes its throwaway certificate authority with it)"
        python3 -m pip install --quiet cryptography || { echo "deps: error: pip could not install cryptography" >&2; exit 1; }
    fi
}

missing=$(packages_for_missing)
if [ -z "$missing" ]; then
    [ "$mode" = build ] || ensure_pytest
    echo "deps: ok (libsodium $(pkg-config --modversion libsodium), lmdb $(pkg-config --modversion lmdb))"
    exit 0
fi

echo "deps: missing system packages: $missing — installing with apt-get"
if ! command -v apt-get >/dev/null 2>&1; then
    echo "deps: error: apt-get is not available; install these packages by hand: $missing" >&2
    exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
        echo "deps: error: not root and no sudo; run as root: apt-get install -y $missing" >&2
        exit 1
    fi
fi
# shellcheck disable=SC2086
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing

still=$(packages_for_missing)
if [ -n "$still" ]; then
    echo "deps: error: still missing after apt-get install: $still" >&2
    exit 1
fi
[ "$mode" = build ] || ensure_pytest
echo "deps: installed $missing (libsodium $(pkg-config --modversion libsodium), lmdb $(pkg-config --modversion lmdb))"
