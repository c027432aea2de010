#!/usr/bin/env bash
# `flowsketch merge` over many default-size snapshots, against `cat` of the
# same files to /dev/null (the page cache's pace): median wall time of REPS
# alternating repetitions, and MB/s of snapshot bytes.
#
# usage: bench/merge_benchmark.sh [BUILD_DIR] [REPS]
#   BUILD_DIR  default build-dev (needs src/flowsketch)
#   REPS       default 3
#
# Snapshots (made under out/bench/snapshots/ if missing): a 1,000 s trace of
# 1,000,000 packets over 10,000 flows (gen --rate 1000, seed 7) replayed with
# the default sizing and --interval 1: 1,000 one-second snapshots, as ten
# probes' 100 s each would be.
# Rows: cat; merge --interval 0 (one report over all); merge --interval 60.
# Columns: median wall seconds; MB/s of file bytes and of payload bytes
# before compression over that time; median CPU seconds (user + system),
# which a shared machine's load does not inflate as it does the wall clock.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build-dev}"
reps="${2:-3}"
bin="$build/src/flowsketch"
[ -x "$bin" ] || { echo "merge_benchmark: $bin is not built" >&2; exit 2; }
work=out/bench
dir=$work/snapshots
mkdir -p "$work"
if [ ! -f "$dir/.complete" ]; then
  rm -rf "$dir"
  "$bin" gen --out "$work/merge-trace.pcap" --packets 1000000 --flows 10000 --rate 1000 --seed 7 >/dev/null
  "$bin" -r "$work/merge-trace.pcap" --interval 1 --probe bench --snapshot-dir "$dir" >/dev/null
  touch "$dir/.complete"
fi
mapfile -t files < <(ls "$dir"/*.fsnap)
bytes=$(cat "${files[@]}" | wc -c)
# Payload bytes before compression: the u64 at offset 16 of each file (docs/snapshots.md).
raw=$(for f in "${files[@]}"; do od -An -t u8 -j 16 -N 8 "$f"; done | awk '{ s += $1 } END { print s }')
echo "snapshots: ${#files[@]} files, $bytes bytes ($(( bytes / ${#files[@]} )) each on average), $raw before compression"

times_of() {  # times_of COMMAND...: "wall cpu" seconds of one run (cpu = user + system)
  local out
  out=$(mktemp)
  /usr/bin/time -f '%e %U %S' -o "$out" "$@" >/dev/null
  awk '{ print $1, $2 + $3 }' "$out"
  rm -f "$out"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

declare -A wall cpu
for _ in $(seq "$reps"); do
  for row in cat merge0 merge60; do
    case $row in
      cat) t=$(times_of cat "${files[@]}") ;;
      merge0) t=$(times_of "$bin" merge --format json "${files[@]}") ;;
      merge60) t=$(times_of "$bin" merge --interval 60 --format json "${files[@]}") ;;
    esac
    wall[$row]+="${t% *} "
    cpu[$row]+="${t#* } "
  done
done
# MB/s of snapshot bytes against the wall clock; CPU seconds beside it, as
# the wall clock of a shared machine also counts the time other work took.
printf '%-24s %12s %10s %14s %12s\n' "" "wall s" "MB/s" "raw MB/s" "CPU s"
for row in cat merge0 merge60; do
  w=$(echo "${wall[$row]}" | tr ' ' '\n' | grep -v '^$' | median)
  c=$(echo "${cpu[$row]}" | tr ' ' '\n' | grep -v '^$' | median)
  case $row in
    cat) name="cat > /dev/null" ;;
    merge0) name="merge --interval 0" ;;
    merge60) name="merge --interval 60" ;;
  esac
  printf '%-24s %12.2f %10.1f %14.1f %12.2f\n' "$name" "$w" "$(awk -v b="$bytes" -v t="$w" 'BEGIN { print b / t / 1e6 }')" \
    "$(awk -v b="$raw" -v t="$w" 'BEGIN { print b / t / 1e6 }')" "$c"
done
