#!/usr/bin/env bash
# ABI check: every coords_ symbol exported by libcoordscore.so is declared in
# include/coordscore.h, and every declaration is exported.
# Usage: scripts/check-abi.sh [path/to/libcoordscore.so]
set -euo pipefail
cd "$(dirname "$0")/.."
lib=${1:-.build/debug/libcoordscore.so}
[ -f "$lib" ] || { echo "check-abi: $lib not found (run make lib)" >&2; exit 1; }
exported=$(nm -D --defined-only "$lib" | awk '($2 == "T" || $2 == "W") && $3 ~ /^coords_/ { sub(/@.*/, "", $3); print $3 }' | sort -u)
declared=$(grep -oE '\bcoords_[a-z0-9_]+ *\(' include/coordscore.h | tr -d ' (' | sort -u)
only_exported=$(comm -23 <(echo "$exported") <(echo "$declared"))
only_declared=$(comm -13 <(echo "$exported") <(echo "$declared"))
if [ -n "$only_exported$only_declared" ]; then
    [ -n "$only_exported" ] && echo "check-abi: exported but not in the header: $only_exported" >&2
    [ -n "$only_declared" ] && echo "check-abi: in the header but not exported: $only_declared" >&2
    exit 1
fi
# Nothing else is exported (include/coordscore.map): every defined global or weak dynamic symbol
# is a coords_ function, or the version node of the script itself.
others=$(readelf --dyn-syms -W "$lib" | awk '($5 == "GLOBAL" || $5 == "WEAK") && $7 != "UND" { sub(/@.*/, "", $8); print $8 }' \
    | grep -v -e '^coords_' -e '^COORDSCORE_[0-9]*$' | sort -u || true)
if [ -n "$others" ]; then
    echo "check-abi: $lib exports $(echo "$others" | wc -l) symbols beyond the C ABI, e.g.: $(echo "$others" | sed -n 1,5p | tr '\n' ' ')" >&2
    echo "check-abi: link it with include/coordscore.map (make lib, make lib-portable)" >&2
    exit 1
fi
echo "check-abi: $(echo "$exported" | wc -l) functions; header and $lib agree, and nothing else is exported"
