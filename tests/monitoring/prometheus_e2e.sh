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

[ -f "$truth" ] || { echo "FAIL: no truth file $truth"; exit 1; }
deadline=$((SECONDS + 60))
# shellcheck source=prometheus_lib.sh
. "$(dirname "$0")/prometheus_lib.sh"

# --- flowsketch: replay the capture, then keep serving /metrics.
start_flowsketch -r "$pcap" --interval 0 --format json -o "$tmp/reports.jsonl"
# --- Prometheus: its own config, data directory and port.
start_prometheus

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

# Series are labelled by the key; the rank is a gauge of its own.
rank1='on(probe, src, dst, sport, dport, proto) (flowsketch_heavy_hitter_packets_rank{job="flowsketch"} == 1)'
top=$(query "flowsketch_heavy_hitter_packets{job=\"flowsketch\"} and $rank1")
lower=$(query "flowsketch_heavy_hitter_packets_lower{job=\"flowsketch\"} and $rank1")
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
want = {"src": src, "dst": dst, "sport": sport, "dport": dport, "proto": proto}
got = {key: labels.get(key) for key in want}
print("rank 1: %s estimate %s lower %s (true count %s)"
      % (got, top[0]["value"], lower[0]["value"], count))
assert got == want, "labels %s, expected %s" % (got, want)
assert "rank" not in labels, "rank is no label: %s" % labels
assert lower[0]["metric"].get("src") == src
# The truth lies in [lower, estimate] (Count-Min never underestimates).
assert float(lower[0]["value"]) <= int(count) <= float(top[0]["value"])
EOF

# flowsketch stops cleanly on SIGTERM.
kill -TERM "$flowsketch_pid"
wait "$flowsketch_pid" || fail "flowsketch exited with status $? after SIGTERM"
flowsketch_pid=""
echo "PASS: Prometheus scraped flowsketch_packets_total and the rank-1 heavy hitter"
