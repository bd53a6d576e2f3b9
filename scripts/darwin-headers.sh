#!/bin/sh
# Darwin's C library headers, for scripts/check-portable.sh when no Apple SDK is named: the copy
# the Zig toolchain ships (lib/libc/include/any-darwin-any, taken from Apple's SDKs; Apple's headers
# are APSL/BSD licensed), out of the `ziglang` wheel on PyPI, pinned by version and SHA-256. Only
# that folder (about 8 MB) is kept, under .build/darwin-headers; nothing else of Zig is used.
# Prints the folder to pass to clang with -isystem; fails (never skips) when it cannot be had.
set -eu
cd "$(dirname "$0")/.."
VERSION=0.17.1
SHA256=ea6cc5d87b033cf0aedfbc8f9549a908cae6c50ac31f1698188fa48a74524b54
OUT=.build/darwin-headers/$VERSION
if [ ! -f "$OUT/any-darwin-any/unistd.h" ]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    echo "darwin-headers: fetching ziglang $VERSION from PyPI for its Darwin libc headers" >&2
    # The wheel for one fixed platform, so its hash is one (the headers are the same in every wheel).
    python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux2010_x86_64 \
        -d "$work" "ziglang==$VERSION" >&2 \
        || { echo "darwin-headers: pip could not download ziglang $VERSION" >&2; exit 1; }
    wheel=$(ls "$work"/ziglang-"$VERSION"-*.whl)
    echo "$SHA256  $wheel" | sha256sum -c --quiet - >&2 \
        || { echo "darwin-headers: $wheel does not have the pinned SHA-256" >&2; exit 1; }
    mkdir -p "$OUT.part"
    python3 - "$wheel" "$OUT.part" <<'PY'
import os, sys, zipfile
prefix = "ziglang/lib/libc/include/any-darwin-any/"
with zipfile.ZipFile(sys.argv[1]) as wheel:
    for name in wheel.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            relative = name[len("ziglang/lib/libc/include/"):]
            if ".." in relative.split("/"):
                sys.exit(f"darwin-headers: refusing the path {name}")
            target = os.path.join(sys.argv[2], relative)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with wheel.open(name) as source, open(target, "wb") as sink:
                sink.write(source.read())
PY
    rm -rf "$OUT" && mv "$OUT.part" "$OUT"
fi
echo "$OUT/any-darwin-any"
