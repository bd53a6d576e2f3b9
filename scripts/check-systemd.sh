#!/usr/bin/env bash
# Checks deploy/systemd/coords-relay.service with `systemd-analyze verify` (Debian's systemd
# package): the unit, with ExecStart pointing at the relay built here, must verify without a
# single message. A deliberately broken copy must be reported, so the check itself can fail.
# Usage: scripts/check-systemd.sh RELAY_BINARY
set -euo pipefail
relay=${1:?usage: check-systemd.sh RELAY_BINARY}
root=$(cd "$(dirname "$0")/.." && pwd)
command -v systemd-analyze >/dev/null || { echo "check-systemd: systemd-analyze missing (make deps installs systemd)" >&2; exit 1; }
[ -x "$relay" ] || { echo "check-systemd: $relay is not built" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed "s#/usr/local/bin/coords-relay#$relay#" "$root/deploy/systemd/coords-relay.service" > "$work/coords-relay.service"
out=$(systemd-analyze verify "$work/coords-relay.service" 2>&1) || { echo "$out" >&2; exit 1; }
[ -z "$out" ] || { echo "check-systemd: coords-relay.service does not verify cleanly:" >&2; echo "$out" >&2; exit 1; }
sed 's/^NoNewPrivileges=yes/NoNewPrivileges=perhaps/' "$work/coords-relay.service" > "$work/broken.service"
mv "$work/broken.service" "$work/coords-relay.service"
out=$(systemd-analyze verify "$work/coords-relay.service" 2>&1 || true)
[ -n "$out" ] || { echo "check-systemd: a broken unit verified cleanly; the check is not checking" >&2; exit 1; }
echo "check-systemd: deploy/systemd/coords-relay.service verifies ($(systemd-analyze --version | sed -n 1p))"
