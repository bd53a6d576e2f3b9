#!/usr/bin/env bash
# `make install` into a staging directory, then: SONAME and symlinks, the README's C program
# built with `pkg-config --cflags --libs coordscore` and nothing else, run against the staged
# library; and one version everywhere (VERSION, CoordsVersion, the header's ABI major, the
# pkg-config file, coords_version(), pyproject, CHANGELOG).
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(cat VERSION)
abi=${version%%.*}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
fail() { echo "check-install: $*" >&2; exit 1; }

make --no-print-directory install DESTDIR="$stage" PREFIX=/usr >/dev/null
lib="$stage/usr/lib"
[ -f "$lib/libcoordscore.so.$version" ] || fail "libcoordscore.so.$version was not installed"
[ "$(readlink "$lib/libcoordscore.so.$abi")" = "libcoordscore.so.$version" ] || fail "libcoordscore.so.$abi is not a symlink to the versioned file"
[ "$(readlink "$lib/libcoordscore.so")" = "libcoordscore.so.$abi" ] || fail "libcoordscore.so is not a symlink to libcoordscore.so.$abi"
soname=$(readelf -d "$lib/libcoordscore.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libcoordscore.so.$abi" ] || fail "SONAME is '$soname', expected libcoordscore.so.$abi"
[ -f "$stage/usr/include/coordscore.h" ] || fail "the header was not installed"

# The README's C program, with pkg-config alone (--define-prefix maps /usr to the stage).
python3 scripts/doc-snippets.py extract README.md c 0 > "$stage/demo.c"
flags=$(PKG_CONFIG_PATH="$lib/pkgconfig" pkg-config --define-prefix --cflags --libs coordscore)
case "$flags" in *"$stage"*) ;; *) fail "pkg-config did not point into the stage: $flags" ;; esac
cc -std=c99 -Wall -Wextra -Werror "$stage/demo.c" $flags -o "$stage/demo"
readelf -d "$stage/demo" | grep -q "NEEDED.*libcoordscore.so.$abi" || fail "the program does not record libcoordscore.so.$abi"
out=$(LD_LIBRARY_PATH="$lib" "$stage/demo")
echo "check-install: $out"
case "$out" in "libcoordscore $version: Bob sees 47.3769 8.5417") ;; *) fail "unexpected output: $out" ;; esac

# One version everywhere.
grep -q "public static let string = \"$version\"" Sources/CoordsCore/Version.swift || fail "CoordsVersion.string is not $version"
grep -q "#define COORDS_ABI_VERSION ${abi}u" include/coordscore.h || fail "COORDS_ABI_VERSION is not $abi"
grep -q "^Version: $version$" "$lib/pkgconfig/coordscore.pc" || fail "coordscore.pc does not say $version"
grep -q "^version = \"$version\"" python/pyproject.toml || fail "python/pyproject.toml does not say $version"
grep -q "^## $version" CHANGELOG.md || fail "CHANGELOG.md has no section for $version"
echo "check-install: SONAME libcoordscore.so.$abi, symlinks, pkg-config and version $version agree"
