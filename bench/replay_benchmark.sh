#!/usr/bin/env bash
# Whole-process replay benchmark: flowsketch against the libpcap floor (a
# program that only walks the same file with pcap_next_ex), same run,
# alternating repetitions, median wall time, ratios and peak RSS.
#
# usage: bench/replay_benchmark.sh [BUILD_DIR] [PACKETS] [FLOWS] [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
packets="${2:-10000000}"
flows="${3:-100000}"
reps="${4:-5}"
flowsketch="$build/src/flowsketch"
floor="$build/bench/pcap_floor"
[ -x "$flowsketch" ] && [ -x "$floor" ] || { echo "build first: scripts/build.sh $build" >&2; exit 1; }

mkdir -p out/bench
trace="out/bench/trace-${packets}p-${flows}f.pcap"
if [ ! -f "$trace" ]; then
  echo "generating $trace ..." >&2
  /usr/bin/time -f "gen: %e s wall, %M KiB peak RSS" \
    "$flowsketch" gen --out "$trace" --packets "$packets" --flows "$flows" --seed 7 >&2
fi

# Page cache: a file idle for ~30 s may be evicted; read it right before timing.
warm() { cat "$trace" > /dev/null; }

declare -a floor_times fs_times fs_rss floor_rss
run() {  # run NAME CMD... → appends "seconds rss_kib"
  local out
  out=$( { /usr/bin/time -f "%e %M" "$@" > /dev/null; } 2>&1 | tail -n 1)
  echo "$out"
}
for ((i = 0; i < reps; i++)); do
  warm
  read -r t m < <(run "$floor" "$trace"); floor_times+=("$t"); floor_rss+=("$m")
  warm
  read -r t m < <(run "$flowsketch" -r "$trace" --interval 0 --format json); fs_times+=("$t"); fs_rss+=("$m")
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
max() { printf '%s\n' "$@" | sort -g | tail -n 1; }
f_med=$(median "${floor_times[@]}")
s_med=$(median "${fs_times[@]}")
echo
echo "trace: $trace ($packets packets, $flows flows), $reps alternating repetitions, median wall time"
printf '%-28s %10s %10s %12s %8s\n' "program" "seconds" "Mpps" "peak RSS" "ratio"
awk -v p="$packets" -v f="$f_med" -v s="$s_med" -v fr="$(max "${floor_rss[@]}")" -v sr="$(max "${fs_rss[@]}")" 'BEGIN {
  printf "%-28s %10.2f %10.2f %9.1f MiB %8.2f\n", "libpcap floor (pcap_floor)", f, p / f / 1e6, fr / 1024, 1.0
  printf "%-28s %10.2f %10.2f %9.1f MiB %8.2f\n", "flowsketch --interval 0", s, p / s / 1e6, sr / 1024, s / f
}'
