#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer (Fuzz/): builds the fuzz binary with
# -sanitize=fuzzer,address and runs every target for a bounded time on its seed corpus.
#
#   scripts/fuzz.sh                 every target, 20 s each (what `make test` runs)
#   scripts/fuzz.sh --time 600      every target, 10 minutes each (`make fuzz`)
#   scripts/fuzz.sh --time 60 json  one target
#   scripts/fuzz.sh --list          the target names
#   scripts/fuzz.sh --no-build …    reuse the fuzz binary already built
#
# New inputs that reach new code go to Fuzz/.build/corpus/<target>/ (not committed); crashes are
# written to Fuzz/.build/crashes/<target>/ and fail the run. The committed seeds in
# Fuzz/corpus/<target>/ stay small.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=20
only=()
while [ $# -gt 0 ]; do
    case "$1" in
        --time) seconds="$2"; shift 2 ;;
        --list) list=1; shift ;;
        --no-build) nobuild=1; shift ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        *) only+=("$1"); shift ;;
    esac
done

targets=(blob-open friend-link fetch-response json relay-upload relay-fetch relay-delete relay-message-post
         envelope mailbox-auth relay-router cgeo backup keychain store-codecs live-frame push-endpoint rotation
         app-responses postgres-url client-address data-file response-limit sealed-value server-url outbox-answer
         prekey-bundle session-message ratchet-state relay-prekeys group-statement group-message group-rules attachment relay-objects object-transfer qr-code)
if [ "${list:-0}" = 1 ]; then printf '%s\n' "${targets[@]}"; exit 0; fi
[ ${#only[@]} -gt 0 ] && targets=("${only[@]}")

if [ "${nobuild:-0}" != 1 ]; then
echo "fuzz: building Fuzz/ with -sanitize=fuzzer,address (the first build takes several minutes)"
swift build --package-path Fuzz -c debug -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing \
    --product CoordsFuzz 2>&1 | grep -E "error|warning: .*Fuzz/Sources|Compiling CoordsFuzz|Build complete" || true
fi
binary=Fuzz/.build/debug/CoordsFuzz
[ -x "$binary" ] || { echo "fuzz: error: the fuzz build failed (run the swift build command above by hand)" >&2; exit 1; }

# ASan: no leak checking (the Swift runtime keeps caches alive by design), fail on anything else.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allocator_may_return_null=1"
failed=()
for target in "${targets[@]}"; do
    seeds="Fuzz/corpus/$target"
    work="Fuzz/.build/corpus/$target"
    crashes="Fuzz/.build/crashes/$target"
    mkdir -p "$work" "$crashes"
    [ -d "$seeds" ] || { echo "fuzz: error: no seed corpus $seeds" >&2; exit 1; }
    log="Fuzz/.build/$target.log"
    if COORDS_FUZZ_TARGET="$target" "$binary" "$work" "$seeds" -max_total_time="$seconds" -timeout=10 \
        -rss_limit_mb=3072 -max_len=131072 -print_final_stats=1 -artifact_prefix="$crashes/" >"$log" 2>&1; then
        runs=$(grep -E "^stat::number_of_executed_units" "$log" | awk '{print $2}')
        cov=$(grep -E "#[0-9]+.*cov:" "$log" | tail -1 | sed -E 's/.*cov: ([0-9]+) ft: ([0-9]+).*/\1 edges, \2 features/')
        echo "fuzz: $target: ${runs:-?} runs in ${seconds}s, ${cov:-coverage ?}, no crash"
    else
        echo "fuzz: $target: FAILED — crash input in $crashes/, log $log:" >&2
        grep -E "ERROR|property failed|Fatal error|SUMMARY|panic|Test unit written" "$log" | head -20 >&2 || tail -30 "$log" >&2
        failed+=("$target")
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: ${#failed[@]} failed, $(( ${#targets[@]} - ${#failed[@]} )) passed: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz: ${#targets[@]} passed, 0 failed"
