# Sourced by every bench script, from the repository's root: wrk, the
# release binary (BIN=/path/to/gatehouse measures another build instead,
# an earlier commit side by side), and the helpers they share.
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN="$PWD/target/release/gatehouse"
fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
json_field() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
