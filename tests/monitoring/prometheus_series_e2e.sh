#!/usr/bin/env bash
# A real Prometheus scrapes flowsketch every second during a paced 20-second
# replay at --top 10 with 1-second intervals, whose top flows change all the
# time; the test then asks Prometheus's TSDB which heavy-hitter series it
# stored and checks them against the JSON reports of the same run:
#
# - every stored series is one key of some interval's top (no rank label: a
#   key that changes rank stays one series), and the number of series active at
#   any scrape stays within docs/prometheus.md's bound K·(S+1);
# - at the end the endpoint exports exactly the keys of the last S+1 complete
#   intervals' tops (the staleness), and its gauges describe the last complete
#   interval, not the partial one the replay's end cut short;
# - the flow counts' bound series exist and carry the JSON report's numbers.
#
#   prometheus_series_e2e.sh FLOWSKETCH
#
# Exit 0 pass, 1 fail, 77 skip (no `prometheus`). Bounded: 150 s.
set -euo pipefail

flowsketch=${1:?usage: prometheus_series_e2e.sh FLOWSKETCH}
deadline=$((SECONDS + 150))
# shellcheck source=prometheus_lib.sh
. "$(dirname "$0")/prometheus_lib.sh"

top=10
staleness=3
# Flows that arrive, burst and end over about 20 s of packet time.
"$flowsketch" gen --out "$tmp/churn.pcap" --lifetimes --packets 30000 --flows 3000 --rate 2000 \
    --duration-mean 1 --ipv6 0.2 --seed 7 >/dev/null 2>"$tmp/gen.err" || fail "flowsketch gen: $(cat "$tmp/gen.err")"

started=$(date +%s)
start_flowsketch -r "$tmp/churn.pcap" --realtime --interval 1 --top "$top" \
    --metrics-staleness "$staleness" --format json -o "$tmp/reports.jsonl" --quiet
start_prometheus

# The replay ends with the final report; then two more scrapes.
until grep -q '"kind":"final"' "$tmp/reports.jsonl" 2>/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || fail "the paced replay did not end in time"
    kill -0 "$flowsketch_pid" 2>/dev/null || fail "flowsketch exited during the replay"
    sleep 0.5
done
sleep 3
finished=$(date +%s)

series 'flowsketch_heavy_hitter_packets{job="flowsketch"}' "$((started - 10))" "$((finished + 1))" \
    >"$tmp/series.jsonl" || fail "the series query failed"
query 'flowsketch_heavy_hitter_packets{job="flowsketch"}' >"$tmp/current.jsonl"
query "max_over_time(count(flowsketch_heavy_hitter_packets{job=\"flowsketch\"})[$((finished - started + 10))s:1s])" \
    >"$tmp/most.jsonl"
for name in flowsketch_report_complete flowsketch_report_packets flowsketch_packets_total \
    flowsketch_interval_flows_new flowsketch_interval_flows_new_upper \
    flowsketch_interval_flows_expired flowsketch_interval_flows_expired_lower \
    flowsketch_interval_flows_expired_upper flowsketch_interval_flows_ended \
    flowsketch_interval_flows_ended_upper flowsketch_flows_new_total \
    flowsketch_flows_new_undercount_bound_total flowsketch_flows_ended_total \
    flowsketch_flows_ended_undercount_bound_total flowsketch_flows_expired_variance_total; do
    query "$name{job=\"flowsketch\"}" >"$tmp/gauge.$name.jsonl"
done

python3 - "$tmp" "$top" "$staleness" <<'EOF' || fail "the stored series break the documented bound"
import json, sys
tmp, k, s = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
names = {1: "icmp", 6: "tcp", 17: "udp", 58: "icmpv6"}
reports = [json.loads(line) for line in open(tmp + "/reports.jsonl")]
intervals = [r for r in reports if r["kind"] == "interval"]
final = [r for r in reports if r["kind"] == "final"][0]
complete = intervals[:-1]  # a replay's last interval is cut short by its end
assert len(complete) >= 15, "expected about 20 intervals, got %d" % len(intervals)

def key(row):
    return (row["src"], row["dst"], str(row["sport"]), str(row["dport"]), names.get(row["proto"], str(row["proto"])))

def labels_key(labels):
    assert "rank" not in labels, "rank is no label: %s" % labels
    return (labels["src"], labels["dst"], labels["sport"], labels["dport"], labels["proto"])

in_some_top = {key(row) for r in intervals for row in r["top_packets"]}
key_rank_pairs = {(key(row), i) for r in intervals for i, row in enumerate(r["top_packets"])}
stored = {labels_key(json.loads(line)) for line in open(tmp + "/series.jsonl")}
most = [json.loads(line) for line in open(tmp + "/most.jsonl")]
most_active = float(most[0]["value"]) if most else 0
print("intervals %d; keys in some top %d; (key, rank) pairs %d (series with a rank label); "
      "series stored %d; most active at one scrape %g (bound K*(S+1) = %d)"
      % (len(intervals), len(in_some_top), len(key_rank_pairs), len(stored), most_active, k * (s + 1)))
assert stored, "Prometheus stored no heavy-hitter series"
assert stored <= in_some_top, "series of keys never in a top: %s" % (stored - in_some_top)
assert len(stored) <= k * (s + 1) + k * len(intervals)
assert 0 < most_active <= k * (s + 1), most_active

current = {labels_key(json.loads(line)["metric"]) for line in open(tmp + "/current.jsonl")}
recent = {key(row) for r in complete[-(s + 1):] for row in r["top_packets"]}
assert current == recent, "exported now %d keys, the last %d complete tops hold %d: extra %s, missing %s" % (
    len(current), s + 1, len(recent), current - recent, recent - current)

gauges = {}
for name in ["flowsketch_report_complete", "flowsketch_report_packets", "flowsketch_packets_total",
             "flowsketch_interval_flows_new", "flowsketch_interval_flows_new_upper",
             "flowsketch_interval_flows_expired", "flowsketch_interval_flows_expired_lower",
             "flowsketch_interval_flows_expired_upper", "flowsketch_interval_flows_ended",
             "flowsketch_interval_flows_ended_upper", "flowsketch_flows_new_total",
             "flowsketch_flows_new_undercount_bound_total", "flowsketch_flows_ended_total",
             "flowsketch_flows_ended_undercount_bound_total", "flowsketch_flows_expired_variance_total"]:
    samples = [json.loads(line) for line in open("%s/gauge.%s.jsonl" % (tmp, name))]
    assert len(samples) == 1, "%s: %d series" % (name, len(samples))
    gauges[name] = float(samples[0]["value"])
last = complete[-1]
assert gauges["flowsketch_report_complete"] == 1
assert gauges["flowsketch_report_packets"] == last["packets"], (gauges["flowsketch_report_packets"], last["packets"])
assert gauges["flowsketch_packets_total"] == final["packets"]
flows = last["flows"]
assert gauges["flowsketch_interval_flows_new"] == flows["new"]
assert gauges["flowsketch_interval_flows_new_upper"] == flows["new"] + flows["new_undercount_bound"]
assert gauges["flowsketch_interval_flows_ended"] == flows["ended"]
assert gauges["flowsketch_interval_flows_ended_upper"] == flows["ended"] + flows["ended_undercount_bound"]
assert abs(gauges["flowsketch_interval_flows_expired"] - flows["precise"]["expired"]) < 1e-9
assert gauges["flowsketch_interval_flows_expired_lower"] <= gauges["flowsketch_interval_flows_expired"] \
    <= gauges["flowsketch_interval_flows_expired_upper"]
assert gauges["flowsketch_flows_new_total"] == final["flows"]["new"]
assert gauges["flowsketch_flows_ended_total"] == final["flows"]["ended"]
assert abs(gauges["flowsketch_flows_new_undercount_bound_total"]
           - final["flows"]["precise"]["new_undercount_bound"]) < 1e-6
print("gauges describe the last complete interval [%s, %s): %d packets; new flows in [%g, %g]"
      % (last["start"], last["end"], last["packets"], gauges["flowsketch_interval_flows_new"],
         gauges["flowsketch_interval_flows_new_upper"]))
EOF

kill -TERM "$flowsketch_pid"
wait "$flowsketch_pid" || fail "flowsketch exited with status $? after SIGTERM"
flowsketch_pid=""
echo "PASS: Prometheus stored only bounded, key-labelled heavy-hitter series"
