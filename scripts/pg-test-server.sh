#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests (Debian's postgresql package; never a mock):
#
#   scripts/pg-test-server.sh start DIR PORT [PID]
#                                              initdb in DIR, start on 127.0.0.1:PORT, create role and
#                                              database "coords" (password "coords-test"); prints the URL.
#                                              With PID: a watchdog stops the server and removes DIR
#                                              once process PID has exited (tests that crash leave nothing).
#   scripts/pg-test-server.sh stop DIR         stop it (fast shutdown) and leave DIR for inspection
#   scripts/pg-test-server.sh restart DIR      stop and start again (same data, same port)
#   scripts/pg-test-server.sh kill DIR         stop it immediately (immediate mode), to test an outage
#
# Run as root, the server runs as the unprivileged "postgres" user (initdb refuses root).
# Authentication over TCP is scram-sha-256, so a wrong password is refused as in production.
set -euo pipefail
command=${1:-}
dir=${2:-}
[ -n "$command" ] && [ -n "$dir" ] || { sed -n '2,15p' "$0"; exit 2; }
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/initdb" ] || { echo "pg-test-server: PostgreSQL is not installed (make deps installs Debian's postgresql)" >&2; exit 1; }
as_owner() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
case "$command" in
start)
    port=${3:?port}
    mkdir -p "$dir"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
    chmod 0700 "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        echo "coords-test" > "$dir/pw" && { [ "$(id -u)" -ne 0 ] || chown postgres: "$dir/pw"; }
        as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
            --pwfile="$dir/pw" -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
        # TLS with a throwaway self-signed certificate, so sslmode=require is tested for real
        # (plain connections stay allowed: pg_hba's "host" lines match both).
        openssl req -x509 -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -days 7 -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
            -keyout "$dir/data/server.key" -out "$dir/data/server.crt" >/dev/null 2>&1 \
            || { echo "pg-test-server: openssl could not make a certificate" >&2; exit 1; }
        chmod 0600 "$dir/data/server.key"
        [ "$(id -u)" -ne 0 ] || chown postgres: "$dir/data/server.key" "$dir/data/server.crt"
        cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 200
fsync = on
synchronous_commit = on
ssl = on
ssl_cert_file = 'server.crt'
ssl_key_file = 'server.key'
CONF
    fi
    # The server must not inherit our stdout/stderr (a caller reading them to the end would wait forever).
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start </dev/null >/dev/null 2>&1 || { cat "$dir/server.log" >&2; exit 1; }
    if [ ! -f "$dir/created" ]; then
        as_owner "$bin/psql" -h "$dir" -p "$port" -U postgres -d postgres -qAt -v ON_ERROR_STOP=1 \
            -c "CREATE ROLE coords LOGIN CREATEDB PASSWORD 'coords-test'" -c "CREATE DATABASE coords OWNER coords" >/dev/null
        touch "$dir/created"
    fi
    watch=${4:-}
    if [ -n "$watch" ] && [ ! -f "$dir/watchdog" ]; then
        touch "$dir/watchdog"
        setsid bash -c "while kill -0 $watch 2>/dev/null; do sleep 2; done; \"$0\" kill \"$dir\" || true; rm -rf \"$dir\"" \
            </dev/null >/dev/null 2>&1 &
    fi
    echo "postgres://coords:coords-test@127.0.0.1:$port/coords"
    ;;
stop) as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null ;;
kill) as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null ;;
restart) as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m fast -w restart </dev/null >/dev/null 2>&1 ;;
*) sed -n '2,15p' "$0"; exit 2 ;;
esac
