#!/usr/bin/env bash
# The DocC site of CoordsCore (Sources/CoordsCore/CoordsCore.docc + every public symbol's doc
# comment) as static HTML in .build-docs/site, with docc from the Swift toolchain (no plugin, so
# the package keeps its single dependency). Any DocC warning fails the build.
set -euo pipefail
cd "$(dirname "$0")/.."
graphs=.build-docs/symbol-graphs
rm -rf .build-docs/coords-graphs .build-docs/site
build() {
    swift build --scratch-path .build-docs --target CoordsCore \
        -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$PWD/$graphs" 2>&1 | tail -1
}
# The compiler writes the graphs when it compiles CoordsCore, so they are kept between runs (an
# up-to-date build writes none); when they are missing, CoordsCore is built again from scratch.
build
if ! compgen -G "$graphs/CoordsCore*.symbols.json" >/dev/null; then
    find .build-docs -mindepth 1 -maxdepth 1 ! -name checkouts ! -name repositories ! -name workspace-state.json -exec rm -rf {} +
    build
fi
mkdir -p .build-docs/coords-graphs
cp "$graphs"/CoordsCore*.symbols.json .build-docs/coords-graphs/
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
