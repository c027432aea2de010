#!/usr/bin/env bash
# The rate a live probe holds: tcpreplay offers small packets on a veth pair
# between two network namespaces of our own at increasing rates; at each rate
# `flowsketch -i` (in each configuration asked for) and `tcpdump -w /dev/null`
# capture in turn on the other end. For each run: what tcpreplay sent, what
# the capturer received, what the kernel dropped. A run holds the rate when it
# dropped nothing and received every packet sent; the CPU time the capturer
# used says how much headroom it had where the sender was the limit. Prints one table row per run
# and, per capturer, the highest rate it held (docs/benchmarks.md, "Live
# capture").
#
#   bench/live_rate.sh [FLOWSKETCH]            # default build/src/flowsketch
#   RATES="50000 100000 top" SECONDS_PER_STEP=3 bench/live_rate.sh   # top: tcpreplay --topspeed
#   CONFIGS="default|-B 67108864|--threads 2" bench/live_rate.sh   # flowsketch options per config
#
# Each step sends for SECONDS_PER_STEP seconds at most (tcpreplay --duration)
# and at most rate × seconds packets: where tcpreplay cannot reach the rate
# asked for, the "achieved" column says what was offered.
#
# Needs root (network namespaces), tcpreplay and tcpdump. Touches nothing
# outside its two namespaces; removes them on exit. Bounded: each run stops
# after its step plus 15 s.
set -uo pipefail

flowsketch=$(realpath "${1:-build/src/flowsketch}")
rates=${RATES:-"25000 50000 100000 150000 200000 top"}
step=${SECONDS_PER_STEP:-3}
configs=${CONFIGS:-"default|-B 67108864|--threads 2|--immediate|--immediate -s 256"}
flows=${FLOWS:-10000}

fail() { echo "live_rate: $*" >&2; exit 1; }
[ -x "$flowsketch" ] || fail "no flowsketch at $flowsketch"
for tool in tcpreplay tcpdump ip python3; do
    command -v "$tool" >/dev/null || fail "$tool is required"
done
[ "$(id -u)" -eq 0 ] || fail "needs root (network namespaces)"

id="lr$$"
ns_send="${id}s"
ns_capture="${id}c"
work=$(mktemp -d "${TMPDIR:-/tmp}/flowsketch-live-rate.XXXXXX")
capturer_pid=""
cleanup() {
    [ -n "$capturer_pid" ] && kill -KILL "$capturer_pid" 2>/dev/null
    ip netns del "$ns_send" 2>/dev/null
    ip netns del "$ns_capture" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ip netns add "$ns_send" || fail "cannot create a network namespace"
ip netns add "$ns_capture" || fail "cannot create a network namespace"
ip link add "${id}a" netns "$ns_send" type veth peer name "${id}b" netns "$ns_capture" || fail "veth"
for side in "$ns_send:${id}a" "$ns_capture:${id}b"; do
    ns="${side%%:*}"; dev="${side##*:}"
    ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1"  # no autoconfiguration chatter
    ip -n "$ns" link set "$dev" up || fail "link up $dev"
done

# 64-byte frames on the wire (60 without the FCS), IPv4 TCP and UDP, many flows.
pcap="$work/small.pcap"
"$flowsketch" gen --out "$pcap" --packets 200000 --flows "$flows" --sizes 60:1 --ipv6 0 \
    --rate 1000000 --seed 7 >/dev/null 2>"$work/gen.err" || fail "flowsketch gen: $(cat "$work/gen.err")"

# CPU seconds (user + system) the process has used so far.
cpu_seconds() {
    awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0
}
sent_of() { sed -n 's/.*Actual: \([0-9]*\) packets.*/\1/p' "$1" | head -n 1; }
achieved_of() { sed -n 's/.*Rated: [0-9.]* Bps, [0-9.]* Mbps, \([0-9.]*\) pps.*/\1/p' "$1" | head -n 1; }
replay() {  # replay RATE: tcpreplay from the sending namespace, preloaded, looped
    local pace=(--topspeed) limit=()
    if [ "$1" != top ]; then
        pace=(--pps "$1")
        limit=(--limit "$(($1 * step))")
    fi
    ip netns exec "$ns_send" timeout $((step + 15)) tcpreplay -q -K -i "${id}a" "${pace[@]}" \
        "${limit[@]}" --duration "$step" --loop 1000 "$pcap" >"$work/replay.out" 2>&1
}
run_flowsketch() {  # run_flowsketch RATE OPTIONS...
    local rate=$1; shift
    local out="$work/fs.jsonl"
    rm -f "$out"
    # shellcheck disable=SC2068
    ip netns exec "$ns_capture" "$flowsketch" -i "${id}b" --interval 0 --format json -o "$out" --quiet $@ \
        2>"$work/fs.err" &
    capturer_pid=$!
    sleep 1  # the interface is open well before the first packet
    replay "$rate"
    sleep 1
    local cpu; cpu=$(cpu_seconds "$capturer_pid")
    kill -INT "$capturer_pid"; wait "$capturer_pid"; capturer_pid=""
    python3 - "$out" "$cpu" <<'PY'
import json, sys
final = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]
i = final["interfaces"][0]
print(i["frames"], i["dropped"] + i["if_dropped"], sys.argv[2])
PY
}
run_tcpdump() {  # run_tcpdump RATE
    ip netns exec "$ns_capture" tcpdump -i "${id}b" -w /dev/null 2>"$work/td.err" &
    capturer_pid=$!
    sleep 1
    replay "$1"
    sleep 1
    local cpu; cpu=$(cpu_seconds "$capturer_pid")
    kill -INT "$capturer_pid"; wait "$capturer_pid"; capturer_pid=""
    local captured dropped
    captured=$(sed -n 's/^\([0-9]*\) packets\{0,1\} captured.*/\1/p' "$work/td.err")
    dropped=$(sed -n 's/^\([0-9]*\) packets\{0,1\} dropped by kernel.*/\1/p' "$work/td.err")
    echo "${captured:-0} ${dropped:-0} $cpu"
}

commit=$(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "# $(date -u +%FT%TZ) $("$flowsketch" --version 2>/dev/null | head -n 1), source at commit $commit"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; ${step} s per step; 64-byte frames, $flows flows"
printf '%-32s %9s %9s %9s %9s %9s %5s %6s %s\n' capturer offered achieved sent received dropped cpu_s ns/pkt held
declare -A best
IFS='|' read -r -a config_list <<<"$configs"
for rate in $rates; do
    for name in tcpdump "${config_list[@]}"; do
        if [ "$name" = tcpdump ]; then
            read -r received dropped cpu < <(run_tcpdump "$rate")
            label="tcpdump -w /dev/null"
        else
            options=$name; [ "$options" = default ] && options=""
            read -r received dropped cpu < <(run_flowsketch "$rate" "$options")
            label="flowsketch ${options:-(defaults)}"
        fi
        sent=$(sent_of "$work/replay.out"); sent=${sent:-0}
        achieved=$(achieved_of "$work/replay.out"); achieved=${achieved:-0}
        held=no
        if [ "$dropped" -eq 0 ] && [ "$received" -ge "$sent" ] && [ "$sent" -gt 0 ]; then
            held=yes
            # The rate really offered, not the rate asked for: tcpreplay may fall short.
            achieved_int=${achieved%.*}
            [ "${best[$label]:-0}" -lt "$achieved_int" ] && best[$label]=$achieved_int
        fi
        # The capturer's CPU time per packet received: its headroom when the sender is the limit.
        per_packet=$(awk -v c="$cpu" -v n="$received" 'BEGIN { if (n > 0) printf "%d", c * 1e9 / n; else print "-" }')
        printf '%-32s %9s %9s %9s %9s %9s %5s %6s %s\n' "$label" "$rate" "${achieved%.*}" "$sent" "$received" \
            "$dropped" "$cpu" "$per_packet" "$held"
    done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
for label in "${!best[@]}"; do
    printf '# highest rate held: %-32s %s pps\n' "$label" "${best[$label]}"
done | sort
