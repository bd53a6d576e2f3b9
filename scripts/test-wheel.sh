#!/usr/bin/env bash
# The manylinux wheel, installed in a fresh venv, on a machine where libsodium and liblmdb are not
# installed: a private mount namespace puts /dev/null over the system's copies, so only the ones
# auditwheel bundled in coordscore.libs/ can load. There: `ldd` of the installed library resolves
# both inside the wheel, the README's Python snippet runs under `env -i` (no Swift toolchain on
# PATH, no PYTHONPATH), and pytest runs the whole Python suite with the package from site-packages.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "test-wheel: $*" >&2; exit 1; }
wheel=$(ls dist/coordscore-"$(cat VERSION)"-py3-none-manylinux_*_"$(uname -m)".whl) || fail "no manylinux wheel in dist/ (make wheel)"
venv=$(mktemp -d)
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "$wheel" pytest
python3 scripts/doc-snippets.py extract README.md python 0 > "$venv/readme.py"
package=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')/coordscore
[ -f "$package/libcoordscore.so" ] || fail "the wheel did not install libcoordscore.so into $package"
# The system's libsodium and liblmdb, by their real files (what the loader would open).
hidden=()
for name in libsodium.so.23 liblmdb.so.0; do
    real=$(ldconfig -p | awk -v n="$name" '$1 == n && !found { print $NF; found = 1 }')
    [ -n "$real" ] && hidden+=("$(readlink -f "$real")")
done
if [ "$(id -u)" -eq 0 ]; then isolate=(unshare --mount); else isolate=(unshare --map-root-user --mount); fi
"${isolate[@]}" bash -s "$venv" "$package" "${hidden[@]}" <<'ISOLATED' || fail "the wheel does not work without the system's libsodium and liblmdb"
set -euo pipefail
venv=$1 package=$2
shift 2
for file in "$@"; do mount --bind /dev/null "$file"; done
echo "test-wheel: hid $# system libraries: $*"
dependencies=$(ldd "$package/libcoordscore.so")
for name in libsodium liblmdb; do
    grep -q "$name.* => $package/../coordscore.libs/\|$name.* => .*/coordscore.libs/" <<<"$dependencies" \
        || { echo "test-wheel: $name does not resolve inside the wheel:"; echo "$dependencies"; exit 1; }
done
! grep -q "not found" <<<"$dependencies" || { echo "$dependencies"; exit 1; }
out=$(cd "$venv" && env -i PATH=/usr/bin:/bin "$venv/bin/python" readme.py)
echo "test-wheel: README snippet printed: $(echo "$out" | tr '\n' ' ')"
grep -q "in Lisbon, Portugal" <<<"$out" || { echo "test-wheel: README snippet did not run as documented"; exit 1; }
location=$(cd "$venv" && env -i PATH=/usr/bin:/bin "$venv/bin/python" -c 'import coordscore, os; print(os.path.dirname(coordscore.__file__))')
case "$location" in "$venv"/*) ;; *) echo "test-wheel: coordscore was imported from $location, not the venv"; exit 1 ;; esac
COORDSCORE_INSTALLED=1 "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/python
ISOLATED
echo "test-wheel: $(basename "$wheel") works in a fresh venv with the system's libsodium and liblmdb hidden"
