#!/usr/bin/env bash
# A real Prometheus server scrapes flowsketch's /metrics; the test asks
# Prometheus's HTTP API for the packet counter and the top heavy hitter and
# compares them with the capture's tshark truth file.
#
#   prometheus_e2e.sh FLOWSKETCH PCAP
#
# flowsketch replays PCAP (--interval 0: the final report describes the whole
# capture, so its top flow is the truth file's) and serves /metrics with
# --listen until SIGTERM. Everything runs on loopback with ports chosen at run
# time and Prometheus's own config and data directory under a temporary
# directory: a system Prometheus (the Debian package's service, if running)
# is never used nor disturbed. Exit 0 pass, 1 fail, 77 skip (no `prometheus`).
set -euo pipefail

flowsketch=${1:?usage: prometheus_e2e.sh FLOWSKETCH PCAP}
pcap=${2:?usage: prometheus_e2e.sh FLOWSKETCH PCAP}
truth="$pcap.truth.tsv"

if ! command -v prometheus >/dev/null 2>&1; then
    echo "SKIP: the prometheus binary is not installed (apt-get install prometheus)"
    exit 77
fi
for tool in curl python3; do
    command -v "$tool" >/dev/null 2>&1 || { echo "FAIL: $tool is required"; exit 1; }
done
[ -f "$truth" ] || { echo "FAIL: no truth file $truth"; exit 1; }

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
deadline=$((SECONDS + 60))
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# A port is free when chosen but could be taken before the server binds it:
# then the server exits, and another port is tried.

# --- flowsketch: replay the capture, then keep serving /metrics.
target=""
for _ in 1 2 3; do
    port=$(free_port)
    "$flowsketch" -r "$pcap" --interval 0 --listen "127.0.0.1:$port" --format json \
        -o "$tmp/reports.jsonl" >"$tmp/flowsketch.out" 2>"$tmp/flowsketch.err" &
    flowsketch_pid=$!
    while kill -0 "$flowsketch_pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
        if curl -fsS "http://127.0.0.1:$port/metrics" >/dev/null 2>&1; then
            target="127.0.0.1:$port"
            break 2
        fi
        sleep 0.1
    done
    kill -0 "$flowsketch_pid" 2>/dev/null && fail "flowsketch did not serve /metrics"
    wait "$flowsketch_pid" 2>/dev/null || true
    flowsketch_pid=""
    grep -q "cannot listen" "$tmp/flowsketch.err" || fail "flowsketch exited early"
done
[ -n "$target" ] || fail "flowsketch could not listen on a free port"
echo "flowsketch metrics at http://$target/metrics"

# --- Prometheus: its own config, data directory and port.
cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: flowsketch
    static_configs:
      - targets: ['$target']
EOF
api=""
for _ in 1 2 3; do
    port=$(free_port)
    prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
        --web.listen-address="127.0.0.1:$port" --log.level=info >"$tmp/prometheus.log" 2>&1 &
    prometheus_pid=$!
    while kill -0 "$prometheus_pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
        if curl -fsS "http://127.0.0.1:$port/-/ready" >/dev/null 2>&1; then
            api="http://127.0.0.1:$port/api/v1"
            break 2
        fi
        sleep 0.2
    done
    kill -0 "$prometheus_pid" 2>/dev/null && fail "prometheus did not become ready"
    wait "$prometheus_pid" 2>/dev/null || true
    prometheus_pid=""
done
[ -n "$api" ] || fail "prometheus would not start (see its log)"
echo "prometheus at ${api%/api/v1}"

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

# Expected values from the tshark truth file: the packet count and the
# flow with the most packets (a unique maximum in this capture).
read -r expected_packets expected_top <<<"$(python3 - "$truth" <<'EOF'
import sys
packets, rows = None, []
for line in open(sys.argv[1]):
    if line.startswith("# ip_packets"):
        packets = int(line.split()[2])
    elif not line.startswith("#") and not line.startswith("proto\t"):
        proto, src, dst, sport, dport, count, _ = line.rstrip("\n").split("\t")
        rows.append((int(count), proto, src, dst, sport, dport))
rows.sort(reverse=True)
assert len(rows) > 1 and rows[0][0] > rows[1][0], "top flow must be unique"
count, proto, src, dst, sport, dport = rows[0]
names = {"1": "icmp", "2": "igmp", "6": "tcp", "17": "udp", "58": "icmpv6"}
print(packets, ",".join([str(count), names.get(proto, proto), src, dst, sport, dport]))
EOF
)"
[ -n "$expected_packets" ] || fail "no '# ip_packets' line in $truth"

# Wait (bounded by the deadline) for a scrape taken after the replay: the
# endpoint serves during the replay too, so early samples may be smaller.
packets=""
while :; do
    packets=$(query 'flowsketch_packets_total{job="flowsketch"}' || true)
    value=$(sed -n 's/.*"value": "\([^"]*\)".*/\1/p' <<<"$packets")
    [ "$value" = "$expected_packets" ] && break
    [ "$SECONDS" -lt "$deadline" ] ||
        fail "flowsketch_packets_total is '${value:-absent}' after 60 s, expected $expected_packets"
    sleep 0.5
done

python3 - "$expected_packets" "$packets" <<'EOF' || fail "flowsketch_packets_total is wrong"
import json, sys
expected, series = int(sys.argv[1]), [json.loads(l) for l in sys.argv[2].splitlines()]
assert len(series) == 1, series
value = float(series[0]["value"])
print("flowsketch_packets_total = %g (expected %d)" % (value, expected))
assert value == expected
EOF

top=$(query 'flowsketch_heavy_hitter_packets{job="flowsketch",rank="1"}')
lower=$(query 'flowsketch_heavy_hitter_packets_lower{job="flowsketch",rank="1"}')
up=$(query 'up{job="flowsketch"}')
python3 - "$expected_top" "$top" "$lower" "$up" <<'EOF' || fail "the rank-1 heavy hitter is wrong"
import json, sys
count, proto, src, dst, sport, dport = sys.argv[1].split(",")
top = [json.loads(l) for l in sys.argv[2].splitlines()]
lower = [json.loads(l) for l in sys.argv[3].splitlines()]
up = [json.loads(l) for l in sys.argv[4].splitlines()]
assert len(up) == 1 and float(up[0]["value"]) == 1, "target not up: %s" % up
assert len(top) == 1, "expected one rank-1 series, got %s" % top
assert len(lower) == 1, "expected one rank-1 lower series, got %s" % lower
labels = top[0]["metric"]
want = {"rank": "1", "src": src, "dst": dst, "sport": sport, "dport": dport, "proto": proto}
got = {key: labels.get(key) for key in want}
print("rank 1: %s estimate %s lower %s (true count %s)"
      % (got, top[0]["value"], lower[0]["value"], count))
assert got == want, "labels %s, expected %s" % (got, want)
assert lower[0]["metric"].get("src") == src
# The truth lies in [lower, estimate] (Count-Min never underestimates).
assert float(lower[0]["value"]) <= int(count) <= float(top[0]["value"])
EOF

# flowsketch stops cleanly on SIGTERM.
kill -TERM "$flowsketch_pid"
wait "$flowsketch_pid" || fail "flowsketch exited with status $? after SIGTERM"
flowsketch_pid=""
echo "PASS: Prometheus scraped flowsketch_packets_total and the rank-1 heavy hitter"
