#!/usr/bin/env bash
# What --clickhouse costs a replay: trace a (10,000,000 packets, 100 s of packet
# time) replayed at --interval 1 (100 windows) without and with the export to a
# local ClickHouse server, beside the libpcap floor, alternating repetitions.
# Per row: the median seconds to the final report (the replay's own work, the
# figure that must not move) and to the process's end (every window delivered);
# then the median over repetitions of export / plain, each pair run back to back.
# A fourth row, busy, is the plain replay while a loop that only computes runs
# where the server runs, at its priority: what any work on that CPU costs the
# replay on this machine, beside what the export costs.
#
# usage: bench/clickhouse_export.sh [BUILD_DIR] [REPS]
#   BUILD_DIR  default build (needs src/flowsketch and bench/pcap_floor)
#   REPS       alternating repetitions, default 5
# Environment:
#   A=FILE          trace a (default out/bench/a.pcap, generated there if missing)
#   SERVER_CPUS=L   CPUs the ClickHouse server is pinned to (taskset list; default the
#                   last CPU): a stand-in for a server on a machine of its own, which a
#                   probe would export to. SERVER_CPUS=all leaves it unpinned
#   SERVER_PRIORITY=idle|normal  the server's scheduling class (default idle: SCHED_IDLE,
#                   so it takes only CPU time the probe leaves, as a server of its own
#                   would; normal: it competes with the probe's threads)
#   CLICKHOUSE=PATH the server binary (default clickhouse-server)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
reps="${2:-5}"
flowsketch="$build/src/flowsketch"
floor="$build/bench/pcap_floor"
trace="${A:-out/bench/a.pcap}"
server_bin="${CLICKHOUSE:-clickhouse-server}"
for tool in "$flowsketch" "$floor"; do
  [ -x "$tool" ] || { echo "missing $tool: build with ./scripts/build.sh $build" >&2; exit 2; }
done
command -v "$server_bin" >/dev/null || { echo "no $server_bin: apt-get install clickhouse-server" >&2; exit 2; }
source bench/ensure_trace.sh
ensure_trace "$trace" --packets 10000000 --flows 100000 --seed 7

source bench/private_clickhouse.sh
cpus="${SERVER_CPUS:-$(($(nproc) - 1))}"
priority="${SERVER_PRIORITY:-idle}"
launcher=()
case "$priority" in
  idle) launcher=(chrt --idle 0) ;;
  normal) ;;
  *) echo "SERVER_PRIORITY is idle or normal, not '$priority'" >&2; exit 2 ;;
esac
[ "$cpus" = all ] || launcher=(taskset -c "$cpus" "${launcher[@]}")
start_private_clickhouse "$server_bin" "${launcher[@]}"
loop_pid=""
stop_loop() { [ -z "$loop_pid" ] || { kill "$loop_pid" 2>/dev/null; wait "$loop_pid" 2>/dev/null; loop_pid=""; } || true; }
trap 'stop_loop; stop_private_clickhouse' EXIT
"$flowsketch" clickhouse-schema --clickhouse "$url" >/dev/null

# Seconds to the final report (its JSON line) and to the end, of one command.
timed() {
  python3 - "$@" <<'EOF'
import subprocess, sys, time
start = time.monotonic()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
final = None
for line in proc.stdout:
    if line.startswith(b'{"kind":"final"'):
        final = time.monotonic() - start
code = proc.wait()
end = time.monotonic() - start
if code != 0:
    sys.exit(f"exit {code}: {' '.join(sys.argv[1:])}")
print(f"{final if final is not None else end:.3f} {end:.3f}")
EOF
}

common=(-r "$trace" -q --interval 1 --format json --probe bench)
declare -A first last
rows=(floor plain busy export)
for rep in $(seq "$reps"); do
  for row in "${rows[@]}"; do
    # Into the page cache just before each run: a kernel may page out file pages it deems idle
    # (these virtual machines run DAMON's pageout), and a run that reads them from disk waits.
    cat "$trace" >/dev/null
    case "$row" in
      floor) t="$(timed "$floor" "$trace")" ;;
      plain) t="$(timed "$flowsketch" "${common[@]}")" ;;
      busy)
        "${launcher[@]}" bash -c 'while :; do :; done' &
        loop_pid=$!
        t="$(timed "$flowsketch" "${common[@]}")"
        stop_loop
        ;;
      export) t="$(timed "$flowsketch" "${common[@]}" --clickhouse "$url" --clickhouse-queue 128)" ;;
    esac
    first[$row]+="${t% *} "
    last[$row]+="${t#* } "
  done
done
windows="$(curl -fs --data-binary "SELECT count() FROM flowsketch.intervals" "$url")"

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
f="$(echo "${first[floor]}" | median)"
echo "trace $trace, $reps alternating repetitions, server CPUs: $cpus, priority: $priority, windows in ClickHouse: $windows"
echo "| row | final report, median s (ratio to the floor) | process end, median s | runs (final report) |"
echo "|---|---:|---:|---|"
for row in "${rows[@]}"; do
  m="$(echo "${first[$row]}" | median)"
  e="$(echo "${last[$row]}" | median)"
  printf '| %s | %s (%.3f) | %s | %s|\n' "$row" "$m" "$(echo "$m / $f" | bc -l)" "$e" "${first[$row]}"
done
# The machine's speed drifts between repetitions; each repetition's export (busy)
# run against the plain run just before it does not.
paired() {
  paste -d' ' <(echo "${first[$1]}" | tr ' ' '\n' | grep -v '^$') \
              <(echo "${first[plain]}" | tr ' ' '\n' | grep -v '^$') | awk '{printf "%.4f ", $1 / $2}'
}
for row in busy export; do
  ratios="$(paired "$row")"
  printf '%s / plain, final report, per repetition: median %.3f (%s)\n' "$row" "$(echo "$ratios" | median)" "$ratios"
done
