#!/usr/bin/env bash
# Starts PgBouncer in transaction pooling on 127.0.0.1:6432 in front of the
# local PostgreSQL (127.0.0.1:5432, trust auth), for the PostgreSQL tests
# and the cluster test to pass through, as production does
# (deploy/kubernetes/database/database.yaml). Prints its URL base.
#
# Debian bookworm's PgBouncer is 1.18, which cannot carry named prepared
# statements in transaction pooling (Gatehouse's driver, sqlx, uses them);
# 1.21 can, with max_prepared_statements. So this builds Debian trixie's
# PgBouncer 1.24.1 from its source package (checked against the digest
# Debian's source index gives) into target/pgbouncer, once.
#
#   tests/pgbouncer/start.sh          # then postgres://postgres@127.0.0.1:6432/…
#   kill "$(cat target/pgbouncer/pgbouncer.pid)"
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR="$PWD/target/pgbouncer"
VERSION=1.24.1
DIGEST=da72a3aba13072876d055a3e58dd4aba4a5de4ed6148e73033185245598fd3e0
PORT="${PGBOUNCER_PORT:-6432}"

if ! [ -x "$DIR/bin/pgbouncer" ]; then
  dpkg -s libevent-dev >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libevent-dev; }
  mkdir -p "$DIR/src"
  tarball="$DIR/src/pgbouncer_$VERSION.orig.tar.gz"
  curl -fsSL -o "$tarball" "http://deb.debian.org/debian/pool/main/p/pgbouncer/pgbouncer_$VERSION.orig.tar.gz"
  echo "$DIGEST  $tarball" | sha256sum --check --quiet
  tar -xzf "$tarball" -C "$DIR/src"
  (cd "$DIR/src/pgbouncer-$VERSION" &&
    ./configure --quiet --prefix="$DIR" --without-cares --without-systemd &&
    make --quiet -j2 && make --quiet install) >"$DIR/build.log" 2>&1 || { cat "$DIR/build.log"; exit 1; }
fi

# Each test makes databases of its own: every name passes through, each
# with a small pool, and idle server connections close after 10 s, so that
# all of them stay under the server's max_connections (100) together.
cat >"$DIR/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=5432
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PORT
unix_socket_dir =
auth_type = trust
auth_file = $DIR/users.txt
pool_mode = transaction
max_prepared_statements = 200
max_client_conn = 4000
default_pool_size = 20
max_user_connections = 85
server_idle_timeout = 10
log_connections = 0
log_disconnections = 0
# sqlx sends extra_float_digits at start-up; PgBouncer would refuse it.
ignore_startup_parameters = extra_float_digits
# A database that refused a login (the cluster test's scenario 4) is tried
# again after 1 s, not 15 s, as deploy/kubernetes sets it.
server_login_retry = 1
logfile = $DIR/pgbouncer.log
pidfile = $DIR/pgbouncer.pid
INI
echo '"postgres" ""' >"$DIR/users.txt"
[ -f "$DIR/pgbouncer.pid" ] && kill "$(cat "$DIR/pgbouncer.pid")" 2>/dev/null && sleep 1
# PgBouncer refuses to run as root.
if [ "$(id -u)" = 0 ]; then
  chown -R postgres "$DIR"
  runuser -u postgres -- "$DIR/bin/pgbouncer" -d "$DIR/pgbouncer.ini"
else
  "$DIR/bin/pgbouncer" -d "$DIR/pgbouncer.ini"
fi
for _ in $(seq 50); do
  timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT" 2>/dev/null && { echo "postgres://postgres@127.0.0.1:$PORT"; exit 0; }
  sleep 0.1
done
echo "PgBouncer did not start: $DIR/pgbouncer.log" >&2
exit 1
