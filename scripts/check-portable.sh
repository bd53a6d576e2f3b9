#!/bin/sh
# The C parts of the core compiled for the phones' targets with the toolchain's clang (in make
# test; docs/MOBILE.md, "Portable sources"):
#   - Sources/CGeoData/CGeoData.c (the bundled place data, embedded with #embed) for
#     arm64-apple-ios18.0, arm64-apple-macos15.0, aarch64-linux-android28 and
#     x86_64-linux-android28, freestanding (it needs no C library): each object must define
#     cgeo_bundled_bytes/cgeo_bundled_size and carry the whole data file in its read-only data;
#   - Sources/CPlatform/CPlatform.c, the platform shim, which needs each platform's C library
#     headers: for this machine always; for iOS and macOS against the SDK named by COORDS_IOS_SDK
#     (an iPhoneOS.sdk) or COORDS_MACOS_SDK (a MacOSX.sdk), else against Darwin's libc headers
#     as the Zig toolchain ships them (scripts/darwin-headers.sh, pinned from PyPI); for Android
#     against COORDS_ANDROID_SYSROOT (the NDK's toolchains/llvm/prebuilt/*/sysroot). Bionic's
#     headers come with the NDK alone (not in Debian, not on PyPI): without one the script says
#     the Android section went uncompiled; it never passes silently.
set -eu
cd "$(dirname "$0")/.."
TOOLS=$(dirname "$(command -v swift)")
CLANG="$TOOLS/clang"
NM="$TOOLS/llvm-nm"
OBJDUMP="$TOOLS/llvm-objdump"
for tool in "$CLANG" "$NM" "$OBJDUMP"; do
    [ -x "$tool" ] || { echo "check-portable: $tool is missing (the Swift toolchain's clang and LLVM tools)" >&2; exit 1; }
done
OUT=.build/portable-check
rm -rf "$OUT" && mkdir -p "$OUT"
DATA=Sources/CGeoData/places15000.cgeo
SIZE=$(wc -c <"$DATA")

for target in arm64-apple-ios18.0 arm64-apple-macos15.0 aarch64-linux-android28 x86_64-linux-android28; do
    object="$OUT/CGeoData-$target.o"
    "$CLANG" --target="$target" -std=c11 -ffreestanding -nostdlibinc -O2 -Werror -Wall -c \
        -I Sources/CGeoData/include -I Sources/CGeoData Sources/CGeoData/CGeoData.c -o "$object"
    prefix=""
    case "$target" in *apple*) prefix="_" ;; esac
    for symbol in cgeo_bundled_bytes cgeo_bundled_size; do
        "$NM" "$object" | grep -q " T $prefix$symbol\$" || { echo "check-portable: $target: $symbol is not defined" >&2; exit 1; }
    done
    # The read-only data section (ELF .rodata, Mach-O __const) holds at least the whole file.
    largest=0
    for hex in $("$OBJDUMP" -h "$object" | awk '$2 ~ /rodata|__const/ { print $3 }'); do
        [ $((0x$hex)) -gt "$largest" ] && largest=$((0x$hex))
    done
    [ "${largest:-0}" -ge "$SIZE" ] || { echo "check-portable: $target: the data section holds ${largest:-0} bytes, the file $SIZE" >&2; exit 1; }
    echo "check-portable: CGeoData for $target: $SIZE bytes embedded"
done

shim() {  # target, sysroot flags…
    target=$1
    shift
    "$CLANG" --target="$target" "$@" -std=gnu11 -O2 -Werror -Wall -Wextra -c -I Sources/CPlatform/include \
        Sources/CPlatform/CPlatform.c -o "$OUT/CPlatform-$target.o"
    echo "check-portable: CPlatform for $target"
}
shim "$("$CLANG" -print-target-triple)"
uncompiled=""
darwin=""
if [ -z "${COORDS_IOS_SDK:-}" ] || [ -z "${COORDS_MACOS_SDK:-}" ]; then darwin=$(scripts/darwin-headers.sh); fi
if [ -n "${COORDS_IOS_SDK:-}" ]; then shim arm64-apple-ios18.0 -isysroot "$COORDS_IOS_SDK"; else shim arm64-apple-ios18.0 -nostdlibinc -isystem "$darwin"; fi
if [ -n "${COORDS_MACOS_SDK:-}" ]; then shim arm64-apple-macos15.0 -isysroot "$COORDS_MACOS_SDK"; else shim arm64-apple-macos15.0 -nostdlibinc -isystem "$darwin"; fi
# The Apple section (F_FULLFSYNC for a durable file) must be what was compiled.
"$NM" "$OUT/CPlatform-arm64-apple-ios18.0.o" | grep -q " U _fcntl\$" || { echo "check-portable: the iOS object does not call fcntl (F_FULLFSYNC)" >&2; exit 1; }
if [ -n "${COORDS_ANDROID_SYSROOT:-}" ]; then
    shim aarch64-linux-android28 --sysroot="$COORDS_ANDROID_SYSROOT"
else
    uncompiled="$uncompiled Android"
fi
if [ -n "$uncompiled" ]; then
    echo "check-portable: CPlatform's sections for$uncompiled not compiled: no NDK sysroot on this machine (COORDS_ANDROID_SYSROOT)"
fi
