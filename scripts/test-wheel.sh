#!/usr/bin/env bash
# The Python suite against the installed wheel: a fresh venv, `pip install dist/coordscore-*.whl`,
# the README's Python snippet under `env -i` (no Swift toolchain on PATH, no PYTHONPATH), then
# pytest with the package from site-packages.
set -euo pipefail
cd "$(dirname "$0")/.."
wheel=$(ls dist/coordscore-"$(cat VERSION)"-*.whl)
venv=$(mktemp -d)
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "$wheel" pytest
python3 scripts/doc-snippets.py extract README.md python 0 > "$venv/readme.py"
out=$(cd "$venv" && env -i PATH=/usr/bin:/bin "$venv/bin/python" readme.py)
echo "test-wheel: README snippet printed: $(echo "$out" | tr '\n' ' ')"
echo "$out" | grep -q "in Lisbon, Portugal" || { echo "test-wheel: README snippet did not run as documented" >&2; exit 1; }
location=$(cd "$venv" && env -i PATH=/usr/bin:/bin "$venv/bin/python" -c 'import coordscore, os; print(os.path.dirname(coordscore.__file__))')
case "$location" in "$venv"/*) ;; *) echo "test-wheel: coordscore was imported from $location, not the venv" >&2; exit 1 ;; esac
COORDSCORE_INSTALLED=1 "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/python
