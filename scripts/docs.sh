#!/usr/bin/env bash
# The DocC site of CoordsCore (Sources/CoordsCore/CoordsCore.docc + every public symbol's doc
# comment) as static HTML in .build-docs/site, with docc from the Swift toolchain (no plugin, so
# the package keeps its single dependency). Any DocC warning fails the build.
#
# The symbol graphs are read from the debug build's module (.build/debug, what `make build`,
# `make lib` and the tests build) with swift symbolgraph-extract: no second build of the core.
set -euo pipefail
cd "$(dirname "$0")/.."
build=.build/debug
swift build --target CoordsCore 2>&1 | tail -1
[ -f "$build/Modules/CoordsCore.swiftmodule" ] || { echo "docs: error: the debug build has no CoordsCore module" >&2; exit 1; }
rm -rf .build-docs/coords-graphs .build-docs/site
mkdir -p .build-docs/coords-graphs
swift symbolgraph-extract -module-name CoordsCore -target "$(uname -m)-unknown-linux-gnu" -minimum-access-level public \
    -I "$build/Modules" -I Sources/CSodium -I Sources/CLMDB -Xcc "-fmodule-map-file=$build/CGeoData.build/module.modulemap" \
    -Xcc "-fmodule-map-file=$build/CPlatform.build/module.modulemap" \
    -output-dir .build-docs/coords-graphs
log=.build-docs/docc.log
docc convert Sources/CoordsCore/CoordsCore.docc \
    --fallback-display-name CoordsCore --fallback-bundle-identifier org.coords.CoordsCore \
    --additional-symbol-graph-dir .build-docs/coords-graphs --output-path .build-docs/site \
    --transform-for-static-hosting --hosting-base-path coordscore >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
if grep -q "warning:" "$log"; then
    grep -A3 "warning:" "$log" >&2
    echo "docs: $(grep -c 'warning:' "$log") DocC warnings (fix the doc comments above)" >&2
    exit 1
fi
pages=$(find .build-docs/site/data/documentation -name '*.json' | wc -l)
# The site is built for https://…/coordscore/ (--hosting-base-path): served from its own folder
# it was a blank page. .build-docs/serve/coordscore is the site, so the printed command serves
# it under that path; it is checked here, the way a reader would open it.
mkdir -p .build-docs/serve
ln -sfn ../site .build-docs/serve/coordscore
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 -d .build-docs/serve "$port" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
python3 - "$port" <<'CHECK' || { echo "docs: the served site does not load its pages and scripts under /coordscore/" >&2; exit 1; }
import re, sys, time, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}"
for _ in range(100):
    try:
        page = urllib.request.urlopen(base + "/coordscore/documentation/coordscore/", timeout=5).read().decode()
        break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit("the page did not load")
assets = re.findall(r'(?:src|href)="(/coordscore/[^"]+\.(?:js|css))"', page)
assert assets, "the page names no script under /coordscore/"
for asset in assets:
    assert urllib.request.urlopen(base + asset, timeout=5).status == 200, asset
CHECK
echo "docs: .build-docs/site ($pages pages, no warnings); read it with:"
echo "  python3 -m http.server -d .build-docs/serve 8000   # then open http://localhost:8000/coordscore/documentation/coordscore/"
