# Shared by the real-Prometheus tests: starts `flowsketch --listen` and a
# Prometheus of its own on loopback ports chosen at run time, with its config
# and data under a temporary directory (a system Prometheus, if running, is
# never used nor disturbed), asks Prometheus's HTTP API, and kills both on
# exit, bounded in time. Source it after `set -euo pipefail`.

if ! command -v prometheus >/dev/null 2>&1; then
    echo "SKIP: the prometheus binary is not installed (apt-get install prometheus)"
    exit 77
fi
for tool in curl python3; do
    command -v "$tool" >/dev/null 2>&1 || { echo "FAIL: $tool is required"; exit 1; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/flowsketch-prom.XXXXXX")
flowsketch_pid=""
prometheus_pid=""
cleanup() {
    local status=$?
    for pid in $prometheus_pid $flowsketch_pid; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in $prometheus_pid $flowsketch_pid; do
        # Bounded: a process that ignores SIGTERM for 10 s is killed.
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    if [ "$status" -ne 0 ] && [ "$status" -ne 77 ]; then
        echo "--- flowsketch stderr"; cat "$tmp/flowsketch.err" 2>/dev/null || true
        echo "--- prometheus log (tail)"; tail -n 30 "$tmp/prometheus.log" 2>/dev/null || true
    fi
    rm -rf "$tmp"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() { echo "FAIL: $*"; exit 1; }
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# start_flowsketch ARGS...: runs `flowsketch ARGS --listen 127.0.0.1:PORT` in
# the background (stdout, stderr in $tmp) until /metrics answers; sets
# $target. A port is free when chosen but could be taken before the server
# binds it: then the server exits, and another port is tried.
start_flowsketch() {
    target=""
    local port
    for _ in 1 2 3; do
        port=$(free_port)
        "$flowsketch" "$@" --listen "127.0.0.1:$port" >"$tmp/flowsketch.out" 2>"$tmp/flowsketch.err" &
        flowsketch_pid=$!
        while kill -0 "$flowsketch_pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
            if curl -fsS "http://127.0.0.1:$port/metrics" >/dev/null 2>&1; then
                target="127.0.0.1:$port"
                echo "flowsketch metrics at http://$target/metrics"
                return 0
            fi
            sleep 0.1
        done
        kill -0 "$flowsketch_pid" 2>/dev/null && fail "flowsketch did not serve /metrics"
        wait "$flowsketch_pid" 2>/dev/null || true
        flowsketch_pid=""
        grep -q "cannot listen" "$tmp/flowsketch.err" || fail "flowsketch exited early"
    done
    fail "flowsketch could not listen on a free port"
}

# start_prometheus: scrapes $target every second; sets $api.
start_prometheus() {
    cat >"$tmp/prometheus.yml" <<EOF_CONFIG
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: flowsketch
    static_configs:
      - targets: ['$target']
EOF_CONFIG
    api=""
    local port
    for _ in 1 2 3; do
        port=$(free_port)
        prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
            --web.listen-address="127.0.0.1:$port" --log.level=info >"$tmp/prometheus.log" 2>&1 &
        prometheus_pid=$!
        while kill -0 "$prometheus_pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
            if curl -fsS "http://127.0.0.1:$port/-/ready" >/dev/null 2>&1; then
                api="http://127.0.0.1:$port/api/v1"
                echo "prometheus at ${api%/api/v1}"
                return 0
            fi
            sleep 0.2
        done
        kill -0 "$prometheus_pid" 2>/dev/null && fail "prometheus did not become ready"
        wait "$prometheus_pid" 2>/dev/null || true
        prometheus_pid=""
    done
    fail "prometheus would not start (see its log)"
}

# query PROMQL: prints the result vector as JSON lines {"metric": {...}, "value": V}.
query() {
    curl -fsS -G "$api/query" --data-urlencode "query=$1" | python3 -c '
import json, sys
reply = json.load(sys.stdin)
if reply.get("status") != "success":
    sys.exit("query failed: %s" % reply)
for series in reply["data"]["result"]:
    print(json.dumps({"metric": series["metric"], "value": series["value"][1]}))
'
}

# series SELECTOR START END: every series the TSDB holds for SELECTOR between
# the two Unix times, one JSON object of labels a line.
series() {
    curl -fsS -G "$api/series" --data-urlencode "match[]=$1" --data-urlencode "start=$2" \
        --data-urlencode "end=$3" | python3 -c '
import json, sys
reply = json.load(sys.stdin)
if reply.get("status") != "success":
    sys.exit("series query failed: %s" % reply)
for labels in reply["data"]:
    print(json.dumps(labels, sort_keys=True))
'
}
