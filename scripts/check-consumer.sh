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

# The dependency line exactly as the README prints it resolves, with only its URL pointing at a
# local clone of this repository (releases are tagged with the bare VERSION, docs/RELEASING.md;
# an untagged checkout is tagged in the clone the way a release is).
version=$(cat VERSION)
line=$(grep -o '\.package(url: "[^"]*", from: "[^"]*")' README.md | sed -n 1p)
[ -n "$line" ] || { echo "check-consumer: README.md has no .package(url:from:) line" >&2; exit 1; }
url=$(sed 's/.*url: "\([^"]*\)".*/\1/' <<<"$line")
name=$(basename "$url" .git)
git clone -q "$root" "$work/remote/$name"
git -C "$work/remote/$name" rev-parse -q --verify "refs/tags/$version" >/dev/null || git -C "$work/remote/$name" tag "$version"
mkdir -p "$work/byurl/Sources/App"
local_line=${line/"$url"/"$work/remote/$name"}
cat > "$work/byurl/Package.swift" <<SWIFT
// swift-tools-version:6.0
import PackageDescription
let package = Package(name: "App", dependencies: [$local_line],
    targets: [.executableTarget(name: "App", dependencies: [.product(name: "CoordsCore", package: "$name")])])
SWIFT
echo 'import CoordsCore; print(CoordsVersion.string)' > "$work/byurl/Sources/App/main.swift"
(cd "$work/byurl" && swift package resolve >"$work/byurl/resolve.log" 2>&1) || { cat "$work/byurl/resolve.log" >&2; exit 1; }
resolved=$(python3 -c "import json,sys; print(' '.join(p['identity'] + '@' + p['state'].get('version', '?') for p in json.load(open(sys.argv[1]))['pins'] if p['identity'] == sys.argv[2]))" "$work/byurl/Package.resolved" "$name")
[ "$resolved" = "$name@$version" ] || { echo "check-consumer: the README line resolved to '$resolved', expected $name@$version" >&2; exit 1; }
echo "check-consumer: the README's line $line resolves (as $name@$version from a clone)"
