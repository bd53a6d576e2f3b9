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

# The tools are installed from the debug build CI already has (a user's `make install` builds release).
make --no-print-directory install DESTDIR="$stage" PREFIX=/usr APPS_CONFIG=debug >/dev/null
lib="$stage/usr/lib"
[ -f "$lib/libcoordscore.so.$version" ] || fail "libcoordscore.so.$version was not installed"
[ "$(readlink "$lib/libcoordscore.so.$abi")" = "libcoordscore.so.$version" ] || fail "libcoordscore.so.$abi is not a symlink to the versioned file"
[ "$(readlink "$lib/libcoordscore.so")" = "libcoordscore.so.$abi" ] || fail "libcoordscore.so is not a symlink to libcoordscore.so.$abi"
soname=$(readelf -d "$lib/libcoordscore.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libcoordscore.so.$abi" ] || fail "SONAME is '$soname', expected libcoordscore.so.$abi"
[ -f "$stage/usr/include/coordscore.h" ] || fail "the header was not installed"

# The README's C program, with pkg-config alone (--define-prefix maps /usr to the stage). Only
# the staged .pc is visible (PKG_CONFIG_LIBDIR), as on a machine without libsodium-dev and
# liblmdb-dev: the header needs neither, and the library records them itself.
python3 scripts/doc-snippets.py extract README.md c 0 > "$stage/demo.c"
! grep -q "^Requires" "$lib/pkgconfig/coordscore.pc" || fail "coordscore.pc requires other packages' .pc files"
flags=$(PKG_CONFIG_LIBDIR="$lib/pkgconfig" pkg-config --define-prefix --cflags --libs coordscore) \
    || fail "pkg-config --cflags --libs coordscore fails without the -dev packages' .pc files"
case "$flags" in *"$stage"*) ;; *) fail "pkg-config did not point into the stage: $flags" ;; esac
cc -std=c99 -Wall -Wextra -Werror "$stage/demo.c" $flags -o "$stage/demo"
readelf -d "$stage/demo" | grep "NEEDED.*libcoordscore.so.$abi" > /dev/null || fail "the program does not record libcoordscore.so.$abi"
out=$(LD_LIBRARY_PATH="$lib" "$stage/demo")
echo "check-install: $out"
case "$out" in "libcoordscore $version: Bob sees 47.3769 8.5417") ;; *) fail "unexpected output: $out" ;; esac

# The README's C quick start exactly as printed, into the live system: its two shell lines run in
# a private mount namespace where /usr/local and /etc are overlays on temporary directories (so
# `make install PREFIX=/usr/local` and its ldconfig change nothing outside), with no
# LD_LIBRARY_PATH and no PKG_CONFIG_PATH. Without ldconfig the program failed with
# "libcoordscore.so.1: cannot open shared object file".
quick="$stage/quick-start"
mkdir -p "$quick"
python3 scripts/doc-snippets.py extract README.md c 0 > "$quick/demo.c"
awk '/^## From C/ { section = 1 } section && /^```sh/ { block = 1; next } block && /^```/ { exit } block { print }' README.md > "$quick/steps.sh"
grep -q "^make install PREFIX=/usr/local" "$quick/steps.sh" && grep -q "pkg-config --cflags --libs coordscore" "$quick/steps.sh" \
    || fail "the README's C quick start changed shape: $(cat "$quick/steps.sh")"
if [ "$(id -u)" -eq 0 ]; then isolate=(unshare --mount); else isolate=(unshare --map-root-user --mount); fi
cat > "$quick/live.sh" <<'LIVE'
set -euo pipefail
quick=$1 repo=$2
for dir in usr/local etc; do
    mkdir -p "$quick/upper/$dir" "$quick/work/$dir"
    mount -t overlay overlay -o "lowerdir=/$dir,upperdir=$quick/upper/$dir,workdir=$quick/work/$dir" "/$dir"
done
cd "$quick"
# The README's lines, run from the repository for `make` and from here for the program.
while IFS= read -r line; do
    case "$line" in
        make*) (cd "$repo" && APPS_CONFIG=debug eval "$line" >/dev/null) ;;
        *) eval "$line" ;;
    esac
done < steps.sh
LIVE
out=$("${isolate[@]}" env -u LD_LIBRARY_PATH -u PKG_CONFIG_PATH bash "$quick/live.sh" "$quick" "$PWD" 2>&1) || fail "the README's C quick start failed: $out"
case "$out" in *"libcoordscore $version: Bob sees 47.3769 8.5417"*) ;; *) fail "the README's C quick start printed: $out" ;; esac
echo "check-install: the README's C quick start, as printed, into /usr/local (overlaid) runs: $(tail -1 <<<"$out")"

# The tools run where no Swift toolchain is: RUNPATH only $ORIGIN-relative, and with the
# toolchain hidden (a private mount namespace with an empty tmpfs over it) and an empty
# environment they start, and `coords init` works.
toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")
for tool in coords coords-relay coords-push-gateway; do
    runpath=$(readelf -d "$stage/usr/bin/$tool" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
    [ "$runpath" = '$ORIGIN/../lib/coords' ] || fail "$tool's RUNPATH is '$runpath', not \$ORIGIN/../lib/coords"
    ! readelf -d "$stage/usr/bin/$tool" | grep "(RPATH)" > /dev/null || fail "$tool has an RPATH"
done
if [ "$(id -u)" -eq 0 ]; then hide=(unshare --mount); else hide=(unshare --map-root-user --mount); fi
hidden=$("${hide[@]}" sh -c '
    set -e
    mount -t tmpfs none "$1"
    [ ! -e "$1/bin/swift" ] || { echo "the toolchain is still visible"; exit 1; }
    for tool in coords coords-relay coords-push-gateway; do
        ! ldd "$2/usr/bin/$tool" | grep -E "not found|$1" || { echo "$tool still needs the toolchain"; exit 1; }
        env -i "$2/usr/bin/$tool" --version
    done
    home=$(mktemp -d)
    env -i COORDS_PASSPHRASE="correct horse battery" COORDS_KEYCHAIN_COST=minimum \
        "$2/usr/bin/coords" init --home "$home/h" --server http://127.0.0.1:9 --name Toolless --json >/dev/null
    rm -rf "$home"
    echo initialised' _ "$toolchain" "$stage") || fail "the installed tools do not run without the toolchain ($toolchain hidden): $hidden"
case "$hidden" in "$version (commit "*$'\n'"$version (commit "*$'\n'initialised) ;; *) fail "without the toolchain: $hidden" ;; esac
sizes=$(stat -c '%n %s' "$stage/usr/bin/coords" "$stage/usr/bin/coords-relay" "$stage/usr/bin/coords-push-gateway" | awk '{ sub(".*/", "", $1); printf "%s %d MiB, ", $1, $2 / 1048576 }')
echo "check-install: coords, coords-relay and coords-push-gateway run with $toolchain hidden under env -i (${sizes%, }, stripped)"

# The tools, their man pages and completions.
for tool in coords coords-relay coords-push-gateway; do
    case "$("$stage/usr/bin/$tool" --version)" in "$version (commit "*) ;; *) fail "$stage/usr/bin/$tool --version does not start with '$version (commit '" ;; esac
    page="$stage/usr/share/man/man1/$tool.1"
    [ -f "$page" ] || fail "$tool.1 was not installed"
    warnings=$(groff -man -Tutf8 -ww -z "$page" 2>&1) || fail "groff failed on $tool.1"
    [ -z "$warnings" ] || fail "groff warns about $tool.1: $warnings"
    rendered=$(MANWIDTH=200 man -l "$page" 2>/dev/null | col -b)
    # Every command of the tool's own definition has its section in the page.
    for command in $("$stage/usr/bin/$tool" --experimental-dump-help | python3 -c 'import json,sys
def walk(c, path):
    for s in c.get("subcommands", []):
        if s.get("shouldDisplay", True) and s["commandName"] != "help":
            print("_".join(path + [s["commandName"]])); walk(s, path + [s["commandName"]])
walk(json.load(sys.stdin)["command"], [])'); do
        grep -q "^ *$tool ${command//_/ }\b" <<<"$rendered" || fail "$tool.1 has no section for '$tool ${command//_/ }'"
        # Help text has no stray line-continuation backslashes (a `\\` at a line end of a Swift
        # multi-line string prints a literal one).
        ! "$stage/usr/bin/$tool" ${command//_/ } --help | grep '\\$' > /dev/null || fail "'$tool ${command//_/ } --help' prints a line ending in a backslash"
    done
    bash -n "$stage/usr/share/bash-completion/completions/$tool" || fail "the bash completion of $tool does not parse"
    zsh -n "$stage/usr/share/zsh/site-functions/_$tool" || fail "the zsh completion of $tool does not parse"
    fish --no-execute "$stage/usr/share/fish/vendor_completions.d/$tool.fish" || fail "the fish completion of $tool does not parse"
done
# bash completes for real: `coords fe<TAB>` offers fetch, `coords outbox <TAB>` its subcommands.
completed=$(PATH="$stage/usr/bin:$PATH" bash -c '
    shopt -s extglob
    source "$1"
    complete_words() { COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
        "$(complete -p coords | sed "s/.*-F \([^ ]*\) .*/\1/")" coords "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
        echo "${COMPREPLY[*]}"; }
    complete_words coords fe
    complete_words coords outbox ""' _ "$stage/usr/share/bash-completion/completions/coords")
grep -q "fetch" <<<"$(sed -n 1p <<<"$completed")" || fail "bash did not complete 'coords fe' to fetch: $completed"
grep -q "flush" <<<"$(sed -n 2p <<<"$completed")" || fail "bash did not complete 'coords outbox ' with flush: $completed"
echo "check-install: coords, coords-relay and coords-push-gateway $version with man pages (every command) and bash/zsh/fish completions"

# One version everywhere.
grep -q "public static let string = \"$version\"" Sources/CoordsCore/Version.swift || fail "CoordsVersion.string is not $version"
grep -q "#define COORDS_ABI_VERSION ${abi}u" include/coordscore.h || fail "COORDS_ABI_VERSION is not $abi"
grep -q "^Version: $version$" "$lib/pkgconfig/coordscore.pc" || fail "coordscore.pc does not say $version"
grep -q "^version = \"$version\"" python/pyproject.toml || fail "python/pyproject.toml does not say $version"
grep -q "^## $version" CHANGELOG.md || fail "CHANGELOG.md has no section for $version"
# Versions the docs print: the Swift dependency line (README, DocC) and the ABI's release string.
for doc in README.md Sources/CoordsCore/CoordsCore.docc/GettingStarted.md; do
    stated=$(sed -n 's/.*\.package(url: "[^"]*", from: "\([^"]*\)").*/\1/p' "$doc")
    [ "$stated" = "$version" ] || fail "$doc's dependency line says from: \"$stated\", VERSION is $version"
done
grep -q "\"$version\" today" docs/ABI.md || fail "docs/ABI.md does not state the release $version"
echo "check-install: SONAME libcoordscore.so.$abi, symlinks, pkg-config and version $version agree"

# `make uninstall` with the same DESTDIR and PREFIX leaves nothing of ours behind.
make --no-print-directory uninstall DESTDIR="$stage" PREFIX=/usr >/dev/null
left=$(find "$stage/usr" \( -type f -o -type l \) | sed "s|^$stage||")
[ -z "$left" ] || fail "make uninstall left: $left"
echo "check-install: make uninstall removed every installed file"
