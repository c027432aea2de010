# Sourced by the ClickHouse benchmarks (bash): a ClickHouse server of the
# benchmark's own, on free loopback ports with a private data directory
# (scripts/clickhouse_private_config.sh), killed and removed when the script exits.
#
#   start_private_clickhouse SERVER_BIN [LAUNCHER...]
# starts SERVER_BIN under LAUNCHER (e.g. taskset -c 1 chrt --idle 0), waits
# until it answers, and sets `url` (http://127.0.0.1:PORT/), `server_pid` and
# `work` (a temporary directory, also the benchmark's to use).

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

stop_private_clickhouse() {
  [ -n "${server_pid:-}" ] && kill -9 "$server_pid" 2>/dev/null || true
  [ -n "${work:-}" ] && rm -rf "$work"
}

start_private_clickhouse() {
  local server_bin="$1"; shift
  work="$(mktemp -d)"
  server_pid=""
  trap stop_private_clickhouse EXIT
  local http_port tcp_port
  http_port="$(free_port)"
  tcp_port="$(free_port)"
  "$(dirname "${BASH_SOURCE[0]}")/../scripts/clickhouse_private_config.sh" "$work" "$http_port" "$tcp_port"
  "$@" "$server_bin" --config-file="$work/config.xml" >/dev/null 2>&1 &
  server_pid=$!
  disown "$server_pid"
  url="http://127.0.0.1:$http_port/"
  for _ in $(seq 100); do
    curl -fs "$url" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "ClickHouse did not answer at $url within 20 s" >&2
  exit 1
}
