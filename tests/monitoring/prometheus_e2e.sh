#!/usr/bin/env bash
# A real Prometheus server scrapes flowsketch's /metrics; the test asks
# Prometheus's HTTP API for the packet counter and the top heavy hitter and
# compares them with the capture's tshark truth file.
#
#   prometheus_e2e.sh METRICS_FIXTURE PCAP
#
# Everything runs on loopback with ports chosen at run time, its own config
# and data directory under a temporary directory: a system Prometheus (the
# Debian package's service, if running) is never used nor disturbed.
# Exit 0 pass, 1 fail, 77 skip (no `prometheus` binary).
set -euo pipefail

fixture=${1:?usage: prometheus_e2e.sh METRICS_FIXTURE PCAP}
pcap=${2:?usage: prometheus_e2e.sh METRICS_FIXTURE PCAP}
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
fixture_pid=""
prometheus_pid=""
cleanup() {
    local status=$?
    for pid in $prometheus_pid $fixture_pid; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in $prometheus_pid $fixture_pid; do
        # Bounded: a process that ignores SIGTERM for 10 s is killed.
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    if [ "$status" -ne 0 ] && [ "$status" -ne 77 ]; then
        echo "--- fixture stderr"; cat "$tmp/fixture.err" 2>/dev/null || true
        echo "--- prometheus log (tail)"; tail -n 30 "$tmp/prometheus.log" 2>/dev/null || true
    fi
    rm -rf "$tmp"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() { echo "FAIL: $*"; exit 1; }
deadline=$((SECONDS + 60))

# --- flowsketch side: replay the capture, serve the exposition on a free port.
"$fixture" "$pcap" >"$tmp/fixture.out" 2>"$tmp/fixture.err" &
fixture_pid=$!
target=""
while [ -z "$target" ]; do
    [ "$SECONDS" -lt "$deadline" ] || fail "the fixture did not start listening"
    kill -0 "$fixture_pid" 2>/dev/null || fail "the fixture exited early"
    target=$(sed -n 's/^listening on //p' "$tmp/fixture.out")
    [ -n "$target" ] || sleep 0.1
done
echo "flowsketch metrics at http://$target/metrics"
curl -fsS "http://$target/metrics" | grep -q '^flowsketch_packets_total ' ||
    fail "http://$target/metrics has no flowsketch_packets_total"

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
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}
# The port is free when chosen but could be taken before Prometheus binds it:
# then Prometheus exits, and another port is tried.
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

# Wait (bounded by the deadline) for the first scrape to reach the API.
packets=""
while [ -z "$packets" ]; do
    [ "$SECONDS" -lt "$deadline" ] || fail "no flowsketch_packets_total in Prometheus after 60 s"
    packets=$(query 'flowsketch_packets_total{job="flowsketch"}' || true)
    [ -n "$packets" ] || sleep 0.5
done

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

# The fixture stops cleanly on SIGTERM (as the live runner will).
kill -TERM "$fixture_pid"
wait "$fixture_pid" || fail "the fixture exited with status $? after SIGTERM"
fixture_pid=""
echo "PASS: Prometheus scraped flowsketch_packets_total and the rank-1 heavy hitter"
