#!/usr/bin/env bash
# Installs coords, coords-relay and coords-push-gateway so they run on a machine without the Swift toolchain:
# each is stripped (its debug info kept next to the build as <tool>.debug, linked with
# .gnu_debuglink), the Swift runtime libraries it loads are copied into a private directory,
# $LIBDIR/coords, and its RUNPATH is set to that directory relative to $ORIGIN (nothing points
# into the toolchain any more). Only the C/C++ runtimes, libsodium, liblmdb and zlib come from
# the system, as for the portable libcoordscore.so.
#
# Usage: scripts/install-tools.sh BUILD_DIR DESTDIR BINDIR LIBDIR
#   BUILD_DIR  Apps/.build/<config>, holding the built coords and coords-relay
#   DESTDIR    staging root (may be empty), BINDIR and LIBDIR the final absolute paths
set -euo pipefail
[ $# -eq 4 ] || { echo "usage: $0 BUILD_DIR DESTDIR BINDIR LIBDIR" >&2; exit 64; }
build=$1 destdir=$2 bindir=$3 libdir=$4
fail() { echo "install-tools: $*" >&2; exit 1; }
command -v patchelf >/dev/null 2>&1 || fail "patchelf is missing (make deps installs Debian's patchelf)"
runtime=$(swift -print-target-info | python3 -c 'import json,sys; print(json.load(sys.stdin)["paths"]["runtimeLibraryPaths"][0])')
[ -d "$runtime" ] || fail "the Swift runtime directory '$runtime' does not exist"
private="$libdir/coords"
relative=$(python3 -c 'import os,sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' "$private" "$bindir")
install -d "$destdir$bindir" "$destdir$private"

# Copies the toolchain's runtime libraries that $1 loads (and theirs, recursively) into the
# private directory, stripped, each finding its siblings through RUNPATH $ORIGIN.
bundle_runtime_of() {
    local library name
    while read -r library; do
        name=$(basename "$library")
        [ -f "$destdir$private/$name" ] && continue
        cp -L "$library" "$destdir$private/$name"
        chmod 0644 "$destdir$private/$name"
        strip --strip-unneeded "$destdir$private/$name"
        patchelf --set-rpath '$ORIGIN' "$destdir$private/$name"
        bundle_runtime_of "$library"
    done < <(ldd "$1" | awk -v dir="$runtime/" 'index($3, dir) == 1 { print $3 }')
}

for tool in coords coords-relay coords-push-gateway; do
    built="$build/$tool"
    [ -x "$built" ] || fail "$built was not built"
    # Debug info stays with the build (gdb finds it through the debuglink).
    objcopy --only-keep-debug "$built" "$built.debug"
    staged="$destdir$bindir/$tool"
    objcopy --strip-debug --strip-unneeded --add-gnu-debuglink="$built.debug" "$built" "$staged.tmp"
    chmod 0755 "$staged.tmp"
    bundle_runtime_of "$built"
    patchelf --set-rpath "\$ORIGIN/$relative" "$staged.tmp"
    mv -f "$staged.tmp" "$staged"
    echo "install-tools: $tool ($(( $(stat -c %s "$staged") / 1048576 )) MiB stripped; debug info in $built.debug)"
done
echo "install-tools: Swift runtime ($(ls "$destdir$private" | wc -l) libraries, $(( $(du -sb "$destdir$private" | cut -f1) / 1048576 )) MiB) in $private; RUNPATH \$ORIGIN/$relative"
