#!/usr/bin/env bash
# The symbol graph of the relay's library (CoordsRelay) from the debug build in Apps/.build, for
# scripts/doc-coverage.py. Run after `swift build --package-path Apps` (make tools): it reads
# the built module and extracts nothing else, so it takes a second and no second build.
#     scripts/relay-symbol-graph.sh OUTPUT_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/relay-symbol-graph.sh OUTPUT_DIR}
build=Apps/.build/debug
[ -f "$build/Modules/CoordsRelay.swiftmodule" ] || { echo "relay-symbol-graph: build the relay first (make tools)" >&2; exit 1; }
# The C modules the relay's dependencies import: SwiftPM's generated module maps, and the
# packages' own (swift-numerics, swift-crypto, …).
maps=()
while IFS= read -r map; do maps+=(-Xcc "-fmodule-map-file=$map"); done < <(
    find "$build/" -maxdepth 2 -name module.modulemap
    find Apps/.build/checkouts -path '*/Sources/*' -name module.modulemap ! -path '*/Benchmarks/*'
)
rm -rf "$out" && mkdir -p "$out"
swift symbolgraph-extract -module-name CoordsRelay -target "$(uname -m)-unknown-linux-gnu" -minimum-access-level public \
    -I "$build/Modules" -I Sources/CSodium -I Sources/CLMDB "${maps[@]}" -output-dir "$out"
