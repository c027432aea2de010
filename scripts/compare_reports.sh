#!/usr/bin/env bash
# Runs two flowsketch builds side by side on the same inputs and options and
# says whether their reports are the same bytes: the check that a change of
# structure changed no output.
#
# usage: scripts/compare_reports.sh OLD_BINARY NEW_BINARY [WORK_DIR]
#
# Inputs: every capture in pcaps/ (each alone, and all as one stream), and three
# generated traces made with OLD_BINARY's `gen` (stationary Zipf, a SYN flood,
# flows with lifetimes). Each input runs with --threads 1 and 2, in text, JSON
# and CSV, with the final report only and with a report per second.
# Exit 0 when every pair matches; otherwise 1, naming the first differing
# runs and keeping both outputs in WORK_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: scripts/compare_reports.sh OLD_BINARY NEW_BINARY [WORK_DIR]" >&2
  exit 2
fi
old="$1"
new="$2"
work="${3:-$(mktemp -d)}"
for program in "$old" "$new"; do
  [ -x "$program" ] || { echo "compare_reports: $program is not an executable" >&2; exit 2; }
done
mkdir -p "$work/traces" "$work/old" "$work/new"

# Traces: small enough to run in seconds, large enough to fill the candidate
# sets, to expire flows and to make the flood share sketch cells.
generate() {
  local name="$1"; shift
  [ -s "$work/traces/$name.pcap" ] || "$old" gen --out "$work/traces/$name.pcap" "$@" >/dev/null 2>&1 ||
    { echo "compare_reports: gen $name failed" >&2; exit 1; }
}
generate zipf --packets 300000 --flows 20000 --seed 11
generate flood --packets 200000 --flows 5000 --syn-flood 300000 --seed 12
generate lifetimes --lifetimes --packets 300000 --flows 30000 --duration-mean 2 --idle-gap 1 --seed 13

inputs=()
for capture in pcaps/*.pcap pcaps/*.pcapng "$work"/traces/*.pcap; do inputs+=("$capture"); done
all_samples=()
for capture in pcaps/*.pcap pcaps/*.pcapng; do all_samples+=(-r "$capture"); done

runs=0
differ=0
memory_only=0
# The state's size in bytes (JSON memory_bytes, the text report's "all state"
# KiB) follows the objects' layout, which a change of structure may move by a
# few bytes: such runs are counted apart and the sizes printed.
without_memory() {
  sed -E 's/"memory_bytes":[0-9]+/"memory_bytes":_/g; s/all state: [0-9,]+ KiB/all state: _ KiB/'
}
compare() {  # compare NAME ARGS...: one run of each build, outputs compared byte for byte
  local name="$1"; shift
  "$old" "$@" >"$work/old/$name" 2>"$work/old/$name.err" || echo "exit $?" >>"$work/old/$name.err"
  "$new" "$@" >"$work/new/$name" 2>"$work/new/$name.err" || echo "exit $?" >>"$work/new/$name.err"
  runs=$((runs + 1))
  if cmp -s "$work/old/$name" "$work/new/$name" && cmp -s "$work/old/$name.err" "$work/new/$name.err"; then
    return 0
  fi
  if cmp -s <(without_memory <"$work/old/$name") <(without_memory <"$work/new/$name") &&
     cmp -s "$work/old/$name.err" "$work/new/$name.err"; then
    memory_only=$((memory_only + 1))
    return 0
  fi
  differ=$((differ + 1))
  if [ "$differ" -le 5 ]; then echo "differs: $name ($*)"; fi
}
for threads in 1 2; do
  for format in text json csv; do
    for interval in 0 1; do
      for input in "${inputs[@]}"; do
        compare "$(basename "$input").t$threads.$format.i$interval" \
          -r "$input" --threads "$threads" --format "$format" --interval "$interval"
      done
      compare "all-samples.t$threads.$format.i$interval" \
        "${all_samples[@]}" --threads "$threads" --format "$format" --interval "$interval"
    done
  done
  # Options that change the structures' shape or the lists' length.
  flood="$work/traces/flood.pcap"
  compare "flood.t$threads.top50-conservative" -r "$flood" --threads "$threads" --format json --top 50 --conservative --interval 1
  compare "flood.t$threads.standard" -r "$flood" --threads "$threads" --format json --cms standard --seen-filter standard
  compare "flood.t$threads.two-choice" -r "$flood" --threads "$threads" --format json --seen-filter two-choice --idle-timeout 0.5
  compare "flood.t$threads.no-flows" -r "$flood" --threads "$threads" --format text --no-flows --interval 1
  compare "lifetimes.t$threads.expiry" -r "$work/traces/lifetimes.pcap" --threads "$threads" --format json --idle-timeout 0.5 --generations 4 --interval 1
  compare "zipf.t$threads.filter" -r "$work/traces/zipf.pcap" --threads "$threads" --format json tcp
done
if [ "$differ" -ne 0 ]; then
  echo "compare_reports: $differ of $runs runs differ (outputs in $work/old and $work/new)"
  exit 1
fi
if [ "$memory_only" -ne 0 ]; then
  sizes() { grep -ohE '"memory_bytes":[0-9]+' "$1"/*.json.i0 2>/dev/null | sort -u | head -3 | tr '\n' ' '; }
  echo "compare_reports: $runs runs; $memory_only differ only in the state's size (old: $(sizes "$work/old"); new: $(sizes "$work/new"))"
  exit 0
fi
echo "compare_reports: $runs runs, every report the same bytes ($work)"
