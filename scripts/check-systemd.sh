#!/usr/bin/env bash
# Checks deploy/systemd/coords-relay.service and coords-push-gateway.service with
# `systemd-analyze verify` (Debian's systemd package): each unit, with ExecStart pointing at the
# binary built here, must verify without a single message. A deliberately broken copy must be
# reported, so the check itself can fail.
# Usage: scripts/check-systemd.sh RELAY_BINARY GATEWAY_BINARY
set -euo pipefail
relay=${1:?usage: check-systemd.sh RELAY_BINARY GATEWAY_BINARY}
gateway=${2:?usage: check-systemd.sh RELAY_BINARY GATEWAY_BINARY}
root=$(cd "$(dirname "$0")/.." && pwd)
command -v systemd-analyze >/dev/null || { echo "check-systemd: systemd-analyze missing (make deps installs systemd)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for pair in "coords-relay:$relay" "coords-push-gateway:$gateway"; do
    unit=${pair%%:*} binary=${pair#*:}
    [ -x "$binary" ] || { echo "check-systemd: $binary is not built" >&2; exit 1; }
    rm -f "$work"/*.service
    sed "s#/usr/local/bin/$unit #$binary #" "$root/deploy/systemd/$unit.service" > "$work/$unit.service"
    grep -q "^ExecStart=$binary " "$work/$unit.service" || { echo "check-systemd: $unit.service's ExecStart changed shape" >&2; exit 1; }
    out=$(systemd-analyze verify "$work/$unit.service" 2>&1) || { echo "$out" >&2; exit 1; }
    [ -z "$out" ] || { echo "check-systemd: $unit.service does not verify cleanly:" >&2; echo "$out" >&2; exit 1; }
    sed 's/^NoNewPrivileges=yes/NoNewPrivileges=perhaps/' "$work/$unit.service" > "$work/broken.service"
    mv "$work/broken.service" "$work/$unit.service"
    out=$(systemd-analyze verify "$work/$unit.service" 2>&1 || true)
    [ -n "$out" ] || { echo "check-systemd: a broken $unit.service verified cleanly; the check is not checking" >&2; exit 1; }
    echo "check-systemd: deploy/systemd/$unit.service verifies ($(systemd-analyze --version | sed -n 1p))"
done
