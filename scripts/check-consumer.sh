#!/usr/bin/env bash
# A new Swift package that depends on CoordsCore (by path, as an app would by URL) must resolve
# only the core's dependencies (swift-log), not the relay's server stack.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/Sources/App"
cat > "$work/Package.swift" <<SWIFT
// swift-tools-version:6.0
import PackageDescription
let package = Package(name: "App", dependencies: [.package(name: "CoordsCore", path: "$root")],
    targets: [.executableTarget(name: "App", dependencies: [.product(name: "CoordsCore", package: "CoordsCore")])])
SWIFT
echo 'import CoordsCore; print(CoordsVersion.string)' > "$work/Sources/App/main.swift"
(cd "$work" && swift package resolve >"$work/resolve.log" 2>&1) || { cat "$work/resolve.log" >&2; exit 1; }
pins=$(python3 -c "import json,sys; print(' '.join(p['identity'] for p in json.load(open(sys.argv[1]))['pins']))" "$work/Package.resolved")
[ "$pins" = "swift-log" ] || { echo "check-consumer: an app depending on CoordsCore resolves: $pins" >&2; exit 1; }
echo "check-consumer: an app depending on CoordsCore resolves 1 package ($pins)"
