#!/usr/bin/env bash
# Live capture end to end: two network namespaces of our own joined by a veth
# pair; tcpreplay sends a sample capture from one side at a bounded rate,
# flowsketch captures on the other. Nothing touches the host's namespace or
# any address outside it. Needs root; exits 77 (ctest: skipped) where network
# namespaces cannot be created.
#
# usage: live_capture.sh FLOWSKETCH PCAP_DIR
set -uo pipefail
flowsketch="$1"
pcaps="$2"
capture="$pcaps/suricata-verify-output-eve-ftp-data.pcap"
truth="$capture.truth.tsv"

id="fs$$"
ns_send="${id}s"
ns_capture="${id}c"
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  ip netns del "$ns_send" 2>/dev/null
  ip netns del "$ns_capture" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

if ! command -v tcpreplay >/dev/null; then echo "SKIP: tcpreplay not installed"; exit 77; fi
if [ "$(id -u)" -ne 0 ] || ! ip netns add "$ns_send" 2>/dev/null; then
  echo "SKIP: cannot create network namespaces here (need root)"; exit 77
fi
ip netns add "$ns_capture" || fail "netns add"
ip link add "${id}a" netns "$ns_send" type veth peer name "${id}b" netns "$ns_capture" || fail "veth"
for side in "$ns_send:${id}a" "$ns_capture:${id}b"; do
  ns="${side%%:*}"; dev="${side##*:}"
  # No IPv6 autoconfiguration chatter: the capture must see only the replay.
  ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1"
  ip -n "$ns" link set "$dev" up || fail "link up $dev"
done

expect_field() {  # expect_field JSON_LINE JQ-LIKE-PATH EXPECTED (python3 reads the JSON)
  python3 - "$1" "$2" "$3" <<'PY' || exit 1
import json, sys
line, path, expected = sys.argv[1], sys.argv[2], sys.argv[3]
value = json.loads(line)
for part in path.split("."):
    value = value[int(part)] if part.isdigit() else value[part]
if str(value).lower() != expected.lower():
    print(f"FAIL: {path} = {value}, expected {expected}", file=sys.stderr)
    sys.exit(1)
PY
}

# 1. A missing interface: one line on stderr naming it, exit code 1.
ip netns exec "$ns_capture" "$flowsketch" -i "${id}nope" >"$work/none.out" 2>"$work/none.err"
code=$?
[ "$code" -eq 1 ] || fail "missing interface: exit $code"
[ "$(wc -l <"$work/none.err")" -eq 1 ] && grep -q "${id}nope" "$work/none.err" || fail "missing interface message: $(cat "$work/none.err")"

# 1b. -Z with an unknown user: one line naming it, exit code 1, no report.
ip netns exec "$ns_capture" "$flowsketch" -i "${id}b" -Z "${id}-no-such-user" >"$work/z.out" 2>"$work/z.err"
code=$?
[ "$code" -eq 1 ] || fail "-Z unknown user: exit $code"
[ "$(wc -l <"$work/z.err")" -eq 1 ] && grep -q "${id}-no-such-user" "$work/z.err" && [ ! -s "$work/z.out" ] \
  || fail "-Z unknown user message: $(cat "$work/z.err")"

# 2. Capture while tcpreplay sends the capture at 2,000 packets/s; privileges
# are dropped to nobody once the interface and the output file are open.
out="$work/reports.jsonl"
ip netns exec "$ns_capture" "$flowsketch" -i "${id}b" --interval 1 --format json -o "$out" \
  -Z nobody --top 300 2>"$work/capture.err" &
fs_pid=$!
pids+=("$fs_pid")
for _ in $(seq 50); do [ -s "$out" ] && break; sleep 0.1; done  # first (empty) interval report
[ -s "$out" ] || fail "flowsketch produced no interval report: $(cat "$work/capture.err")"
user=$(ps -o user= -p "$fs_pid" | tr -d ' ')
[ "$user" = "nobody" ] || fail "-Z nobody: process runs as '$user'"
ip netns exec "$ns_send" timeout 60 tcpreplay -q -i "${id}a" --pps 2000 "$capture" >"$work/replay.out" 2>&1 \
  || fail "tcpreplay: $(cat "$work/replay.out")"
sleep 1.5
kill -INT "$fs_pid"
wait "$fs_pid"
code=$?
[ "$code" -eq 0 ] || fail "flowsketch exit $code after SIGINT: $(cat "$work/capture.err")"

final=$(tail -n 1 "$out")
expect_field "$final" kind final
frames=$(grep '^# frames' "$truth" | awk '{print $3}')
packets=$(grep '^# ip_packets' "$truth" | awk '{print $3}')
bytes=$(grep '^# ip_bytes' "$truth" | awk '{print $3}')
expect_field "$final" interfaces.0.name "${id}b"
expect_field "$final" interfaces.0.dropped 0
expect_field "$final" counts_are_lower_bounds false
expect_field "$final" frames "$frames"
expect_field "$final" packets "$packets"
expect_field "$final" bytes "$bytes"
expect_field "$final" interfaces.0.frames "$frames"

# Every heavy hitter's true count within [lower, estimate]; intervals add up.
python3 - "$out" "$truth" <<'PY' || exit 1
import json, sys
reports = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
truth = {}
for line in open(sys.argv[2]):
    if line.startswith("#") or line.startswith("proto"):
        continue
    proto, src, dst, sport, dport, packets, nbytes = line.split("\t")[:7]
    truth[(int(proto), src, dst, int(sport), int(dport))] = (int(packets), int(nbytes))
final = reports[-1]
assert len(final["top_packets"]) == len(truth), (len(final["top_packets"]), len(truth))
for ranking, column in (("top_packets", 0), ("top_bytes", 1)):
    for f in final[ranking]:
        key = (f["proto"], f["src"], f["dst"], f["sport"], f["dport"])
        assert key in truth, f
        assert f["lower"] <= truth[key][column] <= f["estimate"], (f, truth[key])
intervals = [r for r in reports if r["kind"] == "interval"]
assert sum(r["packets"] for r in intervals) == final["packets"]
for r in intervals:
    assert r["end"] - r["start"] <= 1.0 + 1e-6 and r["end"] >= r["start"], r
print(f"live: {final['frames']} frames, {len(intervals)} interval reports, drops "
      f"{final['interfaces'][0]['dropped']}")
PY

# 3. Live capture exporting every interval to ClickHouse: a private server in
# the capture namespace (on its own loopback), the same replay again. Every
# window is delivered, and the windows merged inside ClickHouse (query) count
# what the reports counted.
if command -v clickhouse-server >/dev/null; then
  ip -n "$ns_capture" link set lo up || fail "lo up"
  ch="$work/clickhouse"
  mkdir -p "$ch"
  "$(dirname "$0")/../../scripts/clickhouse_private_config.sh" "$ch" 18123 19000 || fail "ClickHouse configuration"
  # The namespace is ours alone: its loopback's fixed ports are free.
  ip netns exec "$ns_capture" clickhouse-server --config-file="$ch/config.xml" >"$ch/console.log" 2>&1 &
  pids+=("$!")
  url="http://127.0.0.1:18123"
  for _ in $(seq 150); do ip netns exec "$ns_capture" curl -fs "$url" >/dev/null 2>&1 && break; sleep 0.2; done
  ip netns exec "$ns_capture" "$flowsketch" clickhouse-schema --clickhouse "$url" >/dev/null 2>"$ch/schema.err" \
    || fail "clickhouse-schema: $(cat "$ch/schema.err")"
  out_ch="$work/reports-clickhouse.jsonl"
  ip netns exec "$ns_capture" "$flowsketch" -i "${id}b" --interval 1 --format json -o "$out_ch" \
    --probe live --clickhouse "$url" --top 300 2>"$work/capture-ch.err" &
  fs_pid=$!
  pids+=("$fs_pid")
  for _ in $(seq 50); do [ -s "$out_ch" ] && break; sleep 0.1; done
  [ -s "$out_ch" ] || fail "flowsketch --clickhouse produced no interval report: $(cat "$work/capture-ch.err")"
  ip netns exec "$ns_send" timeout 60 tcpreplay -q -i "${id}a" --pps 2000 "$capture" >"$work/replay-ch.out" 2>&1 \
    || fail "tcpreplay: $(cat "$work/replay-ch.out")"
  sleep 1.5
  kill -INT "$fs_pid"
  wait "$fs_pid"
  code=$?
  [ "$code" -eq 0 ] || fail "flowsketch --clickhouse exit $code after SIGINT: $(cat "$work/capture-ch.err")"
  final=$(tail -n 1 "$out_ch")
  expect_field "$final" kind final
  expect_field "$final" packets "$packets"
  expect_field "$final" clickhouse_undelivered_intervals 0
  ip netns exec "$ns_capture" "$flowsketch" query --clickhouse "$url" --probe live --interval 0 --format json \
    >"$work/query.jsonl" 2>"$work/query.err" || fail "query: $(cat "$work/query.err")"
  windows=$(ip netns exec "$ns_capture" curl -fs --data-binary \
    "SELECT count() FROM flowsketch.intervals WHERE probe = 'live' AND window = 'interval'" "$url") \
    || fail "counting the windows in ClickHouse"
  python3 - "$out_ch" "$work/query.jsonl" "$windows" <<'PY' || exit 1
import json, sys
reports = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
final = reports[-1]
# The exit status 0 says every window was delivered by the end; the final
# report, written before the last deliveries, says none was given up.
intervals = [r for r in reports if r["kind"] == "interval"]
windows = int(sys.argv[3])
assert windows == len(intervals), (windows, len(intervals))
merged = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
assert len(merged) == 1, merged
for field in ("packets", "bytes"):
    assert merged[0][field] == final[field], (field, merged[0][field], final[field])
print(f"live --clickhouse: {windows} windows in ClickHouse, {merged[0]['packets']} packets merged there")
PY
else
  echo "live --clickhouse: skipped (no clickhouse-server)"
fi
echo "PASS"
