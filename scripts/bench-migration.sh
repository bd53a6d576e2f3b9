#!/bin/sh
# The migration of a 1.0.0 store (plaintext, schema 3) with N messages into the sealed store
# (docs/STORE.md): writes the data directory in one process, migrates it in another (so the
# peak RSS is the migration's own), and prints/saves one JSON line. Part of `make bench`.
#
# Usage: scripts/bench-migration.sh [OUT.json] [N]   (default N: 100000)
set -eu
out=${1:-}
count=${2:-100000}
bin=Benchmarks/.build/release/MigrationBench
[ -x "$bin" ] || { echo "bench-migration: build it first: cd Benchmarks && swift build -c release --product MigrationBench" >&2; exit 1; }
dir=$(mktemp -d /tmp/coords-migration-XXXXXX)
trap 'rm -rf "$dir"' EXIT
echo "bench-migration: writing a 1.0.0 store with $count messages" >&2
"$bin" create "$dir/home" "$count"
sync
result=$("$bin" migrate "$dir/home")
echo "$result"
[ -z "$out" ] || echo "$result" > "$out"
