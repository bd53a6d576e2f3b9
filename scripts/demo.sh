#!/usr/bin/env bash
# The CoordsCore demo: a relay, Alice and Bob, one position and one message each way — told as a short story.
# Run with `make demo` (which installs what is missing and builds first).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${COORDS_BIN_DIR:-Apps/.build/debug}
for tool in coords coords-relay; do
    [ -x "$BIN/$tool" ] || { echo "demo: $BIN/$tool is missing; run 'make demo' (it builds first)" >&2; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/coords-demo.XXXXXX")
RELAY_PID=""
cleanup() {
    if [ -n "$RELAY_PID" ] && kill -0 "$RELAY_PID" 2>/dev/null; then
        kill -TERM "$RELAY_PID" 2>/dev/null || true
        wait "$RELAY_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

if [ -t 1 ]; then BOLD=$'\e[1m'; DIM=$'\e[2m'; GREEN=$'\e[32m'; RESET=$'\e[0m'; else BOLD=""; DIM=""; GREEN=""; RESET=""; fi
say() { printf '\n%s%s%s\n' "$BOLD" "$*" "$RESET"; }
run() {  # run AS COMMAND...: show the command, then its output, indented
    local who=$1; shift
    printf '%s  %s$ coords %s%s\n' "$DIM" "$who" "$*" "$RESET"
    "$BIN/coords" "$@" --home "$WORK/$who" 2>&1 | sed 's/^/    /'
}

export COORDS_PASSPHRASE="demo passphrase, not a real one"

say "1. A relay starts on this machine."
"$BIN/coords-relay" --port 0 --data-dir "$WORK/relay" > "$WORK/relay.log" 2>&1 &
RELAY_PID=$!
PORT=""
for _ in $(seq 1 200); do
    PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$WORK/relay.log" | sed -n 1p)
    [ -n "$PORT" ] && break
    sleep 0.05
done
[ -n "$PORT" ] || { echo "demo: the relay did not start:"; cat "$WORK/relay.log"; exit 1; }
RELAY="http://127.0.0.1:$PORT"
echo "   It listens on $RELAY and stores only sealed blobs it cannot read."

say "2. Alice and Bob each create an identity (a key pair kept in an encrypted keychain)."
run alice init --server "$RELAY" --name Alice
run bob init --server "$RELAY" --name Bob

say "3. They swap friend links (in real life: a QR code from 'coords whoami', or a message)."
ALICE_LINK=$("$BIN/coords" whoami --json --home "$WORK/alice" | sed -n 's/.*"link":"\([^"]*\)".*/\1/p')
BOB_LINK=$("$BIN/coords" whoami --json --home "$WORK/bob" | sed -n 's/.*"link":"\([^"]*\)".*/\1/p')
run bob add "$ALICE_LINK"
run alice add "$BOB_LINK"
echo "   Both see the same safety number, so nobody swapped a key in between."

say "4. Alice shares where she is: the Zürich main station."
run alice share --lat 47.37769 --lon 8.54019 --accuracy 15

say "5. Bob fetches. His core checks the relay's signature stamp, then decrypts."
sleep 1
run bob fetch

say "6. Bob shares his position: the Brandenburg Gate in Berlin."
run bob share --lat 52.51628 --lon 13.37770 --accuracy 8

say "7. Alice fetches and sees Bob."
run alice fetch

say "8. Alice sends Bob a message, sealed end to end; Bob reads it and answers."
run alice send Bob "Coffee at the station in 10 minutes?"
run bob inbox
run bob send Alice "On my way!"
run alice chat Bob
echo "   Alice's first message shows [delivered]: Bob's app sent back a sealed receipt."

say "9. Live: both keep 'coords watch' open; every move and message shows up within a second."
"$BIN/coords" watch --interval 3600 --home "$WORK/alice" > "$WORK/alice-watch.txt" 2>&1 &
ALICE_WATCH=$!
"$BIN/coords" watch --interval 3600 --home "$WORK/bob" > "$WORK/bob-watch.txt" 2>&1 &
BOB_WATCH=$!
for _ in $(seq 1 200); do
    grep -q "Live: watching" "$WORK/alice-watch.txt" && grep -q "Live: watching" "$WORK/bob-watch.txt" && break
    sleep 0.05
done
run alice share --lat 47.37420 --lon 8.54110 --accuracy 10
run bob share --lat 52.51950 --lon 13.40160 --accuracy 10
run alice send Bob "I can see you moving."
run bob send Alice "Live, no polling."
sleep 1
kill -TERM "$ALICE_WATCH" "$BOB_WATCH" 2>/dev/null || true
wait "$ALICE_WATCH" "$BOB_WATCH" 2>/dev/null || true
printf '%s  alice$ coords watch   (what it printed while it ran)%s\n' "$DIM" "$RESET"
grep -E "Live:|\(live\)|^Bob: " "$WORK/alice-watch.txt" | sed 's/^/    /'
printf '%s  bob$ coords watch%s\n' "$DIM" "$RESET"
grep -E "Live:|\(live\)|^Alice: " "$WORK/bob-watch.txt" | sed 's/^/    /'

say "10. What the relay saw: public keys and ciphertext. Its metrics count requests, not places or words."
curl -s "$RELAY/metrics" 2>/dev/null | grep -E '^coords_relay_(uploads|fetches|messages_posted|messages_acknowledged)_total' | sed 's/^/    /' || echo "    (curl not installed)"

say "11. The relay stops; everything it wrote is removed."
kill -TERM "$RELAY_PID"
wait "$RELAY_PID" 2>/dev/null || true
RELAY_PID=""
printf '%sDone.%s Try it yourself: coords init --server https://coord.is --name You   (coords --help)\n' "$GREEN" "$RESET"
