#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer (Fuzz/): builds the fuzz binary and runs every target
# for a bounded time on its committed corpus.
#
#   scripts/fuzz.sh                       every target, 20 s each, one at a time
#   scripts/fuzz.sh --time 600            every target, 10 minutes each (`make fuzz`)
#   scripts/fuzz.sh --time 4 --jobs 2     what `make test` runs: each committed corpus replayed
#                                         whole, then a short random run, two targets at a time
#   scripts/fuzz.sh --time 60 json        one target
#   scripts/fuzz.sh --list                the target names
#   scripts/fuzz.sh --no-build …          reuse the fuzz binary already built
#
# The build: our modules (core, relay, fuzz targets) with -sanitize=fuzzer,address, every
# dependency exactly as in the debug build, in Apps/.build (COORDS_PACKAGE=fuzz in the manifests):
# only our code is compiled again. Our modules there are then the instrumented ones, so the next
# `swift build --package-path Apps` compiles them back (a minute or two); `make test` fuzzes last.
#
# libFuzzer runs every input of the corpus before its first mutation, whatever the time limit,
# so a short run still replays every committed seed. New inputs that reach new code go to
# Fuzz/.build/corpus/<target>/ (not committed); crashes are written to
# Fuzz/.build/crashes/<target>/ and fail the run. The committed seeds in Fuzz/corpus/<target>/
# stay small.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=20
jobs=1
only=()
while [ $# -gt 0 ]; do
    case "$1" in
        --time) seconds="$2"; shift 2 ;;
        --jobs) jobs="$2"; shift 2 ;;
        --list) list=1; shift ;;
        --no-build) nobuild=1; shift ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        *) only+=("$1"); shift ;;
    esac
done
case "$seconds$jobs" in *[!0-9]*) echo "fuzz: error: --time and --jobs take whole numbers" >&2; exit 2 ;; esac
[ "$jobs" -ge 1 ] || jobs=1

targets=(blob-open friend-link fetch-response json relay-upload relay-fetch relay-delete relay-message-post
         envelope mailbox-auth relay-router cgeo backup keychain store-codecs live-frame push-endpoint rotation
         app-responses postgres-url client-address data-file response-limit sealed-value server-url outbox-answer
         prekey-bundle session-message ratchet-state relay-prekeys group-statement group-message group-rules attachment relay-objects object-transfer qr-code gateway-token gateway-router provider-answer)
if [ "${list:-0}" = 1 ]; then printf '%s\n' "${targets[@]}"; exit 0; fi
[ ${#only[@]} -gt 0 ] && targets=("${only[@]}")

if [ "${nobuild:-0}" != 1 ]; then
echo "fuzz: building Fuzz/ (our modules with -sanitize=fuzzer,address) in Apps/.build"
mkdir -p Fuzz/.build
built=0
COORDS_PACKAGE=fuzz swift build --package-path Fuzz --scratch-path Apps/.build --product CoordsFuzz > Fuzz/.build/build.log 2>&1 || built=$?
grep -E "error|warning: .*Fuzz/Sources|Compiling CoordsFuzz|Build of product" Fuzz/.build/build.log || true
# A failed build must not fall back on an earlier binary (its targets are not these).
[ "$built" = 0 ] || { echo "fuzz: error: the fuzz build failed (exit $built; Fuzz/.build/build.log)" >&2; exit 1; }
fi
binary=Apps/.build/debug/CoordsFuzz
[ -x "$binary" ] || { echo "fuzz: error: the fuzz build failed (run the swift build command above by hand)" >&2; exit 1; }

# ASan: no leak checking (the Swift runtime keeps caches alive by design), fail on anything else.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allocator_may_return_null=1"
mkdir -p Fuzz/.build/results
rm -f Fuzz/.build/results/*

# One target: its line in Fuzz/.build/results/<target> ("ok …" or "FAILED …"), its log beside it.
run_target() {
    local target=$1
    local seeds="Fuzz/corpus/$target" work="Fuzz/.build/corpus/$target" crashes="Fuzz/.build/crashes/$target"
    local log="Fuzz/.build/$target.log" result="Fuzz/.build/results/$target"
    mkdir -p "$work" "$crashes"
    if [ ! -d "$seeds" ]; then echo "FAILED no seed corpus $seeds" >"$result"; return; fi
    local started=$SECONDS
    if COORDS_FUZZ_TARGET="$target" "$binary" "$work" "$seeds" -max_total_time="$seconds" -timeout=10 \
        -rss_limit_mb=3072 -max_len=131072 -print_final_stats=1 -artifact_prefix="$crashes/" >"$log" 2>&1; then
        local runs cov
        runs=$(grep -E "^stat::number_of_executed_units" "$log" | awk '{print $2}')
        cov=$(grep -E "#[0-9]+.*cov:" "$log" | tail -1 | sed -E 's/.*cov: ([0-9]+) ft: ([0-9]+).*/\1 edges, \2 features/')
        echo "ok $(find "$seeds" -type f | wc -l) seeds replayed, ${runs:-?} runs in $((SECONDS - started)) s, ${cov:-coverage ?}, no crash" >"$result"
    else
        echo "FAILED crash input in $crashes/, log $log" >"$result"
    fi
}

# Up to $jobs targets at a time; each line is printed as its target ends.
failed=()
report() {
    local target=$1 line
    line=$(cat "Fuzz/.build/results/$target" 2>/dev/null || echo "FAILED no result")
    if [ "${line%% *}" = ok ]; then
        echo "fuzz: $target: ${line#ok }"
    else
        echo "fuzz: $target: ${line#FAILED }:" >&2
        grep -E "ERROR|property failed|Fatal error|SUMMARY|panic|Test unit written" "Fuzz/.build/$target.log" 2>/dev/null | head -20 >&2 \
            || tail -30 "Fuzz/.build/$target.log" >&2 2>/dev/null || true
        failed+=("$target")
    fi
}
declare -A running=()
finish_one() {
    local ended=""
    wait -n -p ended "${!running[@]}" || true
    report "${running[$ended]}"
    unset "running[$ended]"
}
for target in "${targets[@]}"; do
    run_target "$target" &
    running[$!]=$target
    if [ ${#running[@]} -ge "$jobs" ]; then finish_one; fi
done
while [ ${#running[@]} -gt 0 ]; do finish_one; done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: ${#failed[@]} failed, $(( ${#targets[@]} - ${#failed[@]} )) passed: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz: ${#targets[@]} passed, 0 failed"
