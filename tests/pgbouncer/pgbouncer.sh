#!/usr/bin/env bash
# PgBouncer in transaction pooling on 127.0.0.1:6432 in front of the local
# PostgreSQL (127.0.0.1:5432, trust auth), for the cluster test (and, by
# hand, the PostgreSQL suite) to pass through, as production does
# (deploy/kubernetes/database/database.yaml).
#
#   tests/pgbouncer/pgbouncer.sh start   # prints postgres://postgres@127.0.0.1:6432
#   tests/pgbouncer/pgbouncer.sh stop
#
# Debian bookworm's PgBouncer is 1.18, which cannot carry named prepared
# statements in transaction pooling (Gatehouse's driver, sqlx, uses them);
# 1.21 can, with max_prepared_statements. So `start` builds Debian trixie's
# PgBouncer from its source package, checked against the digest Debian's
# source index gives, into target/pgbouncer, once. When Debian replaces
# that version in trixie, take the new VERSION and DIGEST from
# http://deb.debian.org/debian/dists/trixie/main/source/Sources.xz.
#
# Only the URL goes to standard output; everything else to standard error.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD="$PWD/target/pgbouncer"
VERSION=1.24.1
DIGEST=da72a3aba13072876d055a3e58dd4aba4a5de4ed6148e73033185245598fd3e0
PORT="${PGBOUNCER_PORT:-6432}"
# Its configuration, pid file and log, and a copy of the binary, in a
# directory of its own that the user it runs as owns and can reach (a
# checkout under a private home directory would not be).
RUN="/tmp/gatehouse-pgbouncer-$PORT"

stop() {
  local pid
  pid="$(cat "$RUN/pgbouncer.pid" 2>/dev/null)" || return 0
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = pgbouncer ] || return 0
  kill -QUIT "$pid" # an immediate shutdown: the clients are tests
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid"
}

build() {
  dpkg -s libevent-dev >/dev/null 2>&1 ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libevent-dev; }
  mkdir -p "$BUILD/src"
  local tarball="$BUILD/src/pgbouncer_$VERSION.orig.tar.gz"
  curl -fsSL -o "$tarball" "http://deb.debian.org/debian/pool/main/p/pgbouncer/pgbouncer_$VERSION.orig.tar.gz"
  echo "$DIGEST  $tarball" | sha256sum --check --quiet
  tar -xzf "$tarball" -C "$BUILD/src"
  (cd "$BUILD/src/pgbouncer-$VERSION" &&
    ./configure --quiet --prefix="$BUILD" --without-cares --without-systemd &&
    make --quiet -j2 && make --quiet install) >"$BUILD/build.log" 2>&1 || { cat "$BUILD/build.log"; exit 1; }
}

start() {
  [ -x "$BUILD/bin/pgbouncer" ] || build >&2
  stop
  rm -rf "$RUN"
  mkdir -p "$RUN"
  cp "$BUILD/bin/pgbouncer" "$RUN/pgbouncer"
  # Each test makes databases of its own: every name passes through, each
  # with a small pool, and idle server connections close after 10 s, so
  # that all of them stay under the server's max_connections (100).
  cat >"$RUN/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=5432
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PORT
unix_socket_dir =
auth_type = trust
auth_file = $RUN/users.txt
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
logfile = $RUN/pgbouncer.log
pidfile = $RUN/pgbouncer.pid
INI
  echo '"postgres" ""' >"$RUN/users.txt"
  # PgBouncer refuses to run as root: as root, it runs as postgres.
  local as=()
  if [ "$(id -u)" = 0 ]; then
    chown -R postgres "$RUN"
    as=(runuser -u postgres --)
  fi
  "${as[@]}" "$RUN/pgbouncer" -d "$RUN/pgbouncer.ini"
  for _ in $(seq 50); do
    if timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT" 2>/dev/null; then
      echo "postgres://postgres@127.0.0.1:$PORT"
      return 0
    fi
    sleep 0.1
  done
  echo "PgBouncer did not start: $RUN/pgbouncer.log" >&2
  exit 1
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
