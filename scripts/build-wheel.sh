#!/usr/bin/env bash
# Builds dist/coordscore-<version>-py3-none-linux_<arch>.whl with the portable libcoordscore.so
# inside (run by `make wheel` after `make lib-portable`). Uses PyPI's `build` in a throwaway venv.
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
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --upgrade build "setuptools>=68" wheel
mkdir -p dist
"$work/venv/bin/python" -m build --wheel --no-isolation --outdir dist "$work/src" >"$work/build.log" 2>&1 || {
    cat "$work/build.log" >&2; exit 1; }
ls dist/coordscore-"$(cat VERSION)"-*.whl
