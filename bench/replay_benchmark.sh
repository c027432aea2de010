#!/usr/bin/env bash
# Whole-process replay benchmark: flowsketch against the libpcap
# floor (a program that only walks the same file with pcap_next_ex), the page
# cache (cat), and an exact hash-map counter, in the same run, alternating
# repetitions, median wall time, ratios to the floor and peak RSS.
#
# usage: bench/replay_benchmark.sh [BUILD_DIR] [REPS]
#   BUILD_DIR  default build (needs src/flowsketch, bench/pcap_floor, bench/exact_counter)
#   REPS       alternating repetitions per trace, default 5
#
# Traces (generated under out/bench/ if missing, with flowsketch gen):
#   a     10,000,000 packets over 100,000 flows (Zipf 1.1), seed 7
#   b     SYN flood: --packets 5000000 --flows 100000 --syn-flood 5000000 --seed 7;
#         with a build whose gen lacks --syn-flood, the stand-in is 5,000,000 short-lived
#         flows (--lifetimes --flows 5000000 --packets 10000000 --flow-rate 100000
#         --duration-mean 5 --seed 7); the script says which one it used
#   c10k  10,000,000 packets over 10,000 flows, seed 7: only for the peak-RSS
#         comparison (flowsketch's memory must not depend on the flows)
#   a-whole, b-whole  a and b with every frame captured whole (--snaplen 65535,
#         as `tcpdump -s 0` writes them) instead of gen's default 128 bytes:
#         3.7 and 2.2 GB. Not measured unless named in TRACES. They show how
#         the ratios move when libpcap has whole frames to copy, as in most
#         captures taken in the field
#   a-ng, b-ng  a and b as pcapng (gen --format pcapng: one interface, an
#         enhanced packet block per packet, as Wireshark's dumpcap writes),
#         1.2 and 1.1 GB. Not measured unless named in TRACES. The floor reads
#         them with libpcap's pcapng reader
# The gen command of each trace is kept next to it (TRACE.cmd); a trace whose
# recipe changed is generated again.
#
# Environment:
#   SCALE=N     divide every packet and flow count by N; traces get a -sN suffix
#               (quick smoke run: SCALE=50 bench/replay_benchmark.sh build 1)
#   A=FILE B=FILE C10K=FILE A_WHOLE=FILE B_WHOLE=FILE A_NG=FILE B_NG=FILE
#               use these capture files instead (used as they are if they exist,
#               otherwise generated there with the recipe above)
#   TRACES="a b"  which of a, b, a-whole, b-whole, a-ng, b-ng to measure (default a b; c10k
#               always runs once when b does, for the RSS line)
#   PIPE=1      three more rows: the floor and flowsketch (--threads 1 and 2)
#               reading the trace from a pipe (`cat TRACE | ... -r -`), as
#               `zstd -dc` or `ssh probe tcpdump -w -` would feed it
#   EXTRA="ARGS|ARGS..."  more rows: flowsketch --threads 1 and 2 with each set of
#               arguments (e.g. EXTRA="--key dst --key src/24|--key dst:distinct=src"
#               for the cost of extra key specs and of a distinct count)
#   LOAD=N      N busy loops run beside every row for the whole run (the machine
#               shared with other work); they are stopped when the script ends
#   BASELINE=FILE another flowsketch binary (e.g. the previous release, built
#               from an older commit) timed in the same alternation, as two more
#               rows: the machine's speed drifts by ±15% over minutes, so only a
#               comparison within one run says whether a build is faster
#
# Output: a table per trace on standard output, and the same as Markdown in
# out/bench/results.md (results-sN.md with SCALE=N).
# What the rows mean, and the traps: docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -gt 2 ]; then
  echo "usage: bench/replay_benchmark.sh [BUILD_DIR] [REPS] (traces: see the header; SCALE=N for small ones)" >&2
  exit 2
fi
build="${1:-build}"
reps="${2:-5}"
scale="${SCALE:-1}"
traces="${TRACES:-a b}"
flowsketch="$build/src/flowsketch"
floor="$build/bench/pcap_floor"
exact="$build/bench/exact_counter"
baseline="${BASELINE:-}"
for program in "$flowsketch" "$floor" "$exact" ${baseline:+"$baseline"}; do
  [ -x "$program" ] || { echo "missing $program: build first (scripts/build.sh $build)" >&2; exit 1; }
done
[[ "$scale" =~ ^[1-9][0-9]*$ ]] || { echo "SCALE must be a positive integer" >&2; exit 2; }
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || { echo "REPS must be a positive integer" >&2; exit 2; }

mkdir -p out/bench
suffix=""
[ "$scale" -eq 1 ] || suffix="-s$scale"
n() { echo $(( $1 / scale > 0 ? $1 / scale : 1 )); }  # a count divided by SCALE, at least 1

# Features other engineers are adding: detect them from --help, never assume.
# The help is captured first: `--help | grep -q` under pipefail fails whenever
# grep exits before flowsketch has written everything (SIGPIPE), and a row
# then silently disappears.
main_help=$("$flowsketch" --help 2>&1 || true)
gen_help=$("$flowsketch" gen --help 2>&1 || true)
has() { grep -q -- "$2" <<<"$1"; }
if has "$gen_help" '--syn-flood'; then has_syn_flood=1; else has_syn_flood=0; fi
if has "$main_help" '--threads'; then has_threads=1; else has_threads=0; fi
if has "$main_help" '--no-flows'; then has_no_flows=1; else has_no_flows=0; fi
if has "$gen_help" 'pcapng'; then has_pcapng=1; else has_pcapng=0; fi

source bench/ensure_trace.sh

trace_a="${A:-out/bench/a$suffix.pcap}"
trace_b="${B:-out/bench/b$suffix.pcap}"
trace_c="${C10K:-out/bench/c10k$suffix.pcap}"
trace_a_whole="${A_WHOLE:-out/bench/a-whole$suffix.pcap}"
trace_b_whole="${B_WHOLE:-out/bench/b-whole$suffix.pcap}"
trace_a_ng="${A_NG:-out/bench/a-ng$suffix.pcapng}"
trace_b_ng="${B_NG:-out/bench/b-ng$suffix.pcapng}"
whole=(--snaplen 65535)
ng=(--format pcapng)
if [ "$has_syn_flood" -eq 1 ]; then
  b_args=(--packets "$(n 5000000)" --flows "$(n 100000)" --syn-flood "$(n 5000000)" --seed 7)
  b_desc="SYN flood: gen ${b_args[*]}"
else
  b_args=(--lifetimes --flows "$(n 5000000)" --packets "$(n 10000000)" --flow-rate 100000 --duration-mean 5 --seed 7)
  b_desc="stand-in for the SYN flood (gen has no --syn-flood yet): gen ${b_args[*]}"
fi
echo "trace b: $b_desc" >&2

declare -A path desc
for t in $traces; do
  case "$t" in
    a) ensure_trace "$trace_a" --packets "$(n 10000000)" --flows "$(n 100000)" --seed 7
       path[a]="$trace_a"; desc[a]="Zipf 1.1: gen --packets $(n 10000000) --flows $(n 100000) --seed 7" ;;
    b) ensure_trace "$trace_b" "${b_args[@]}"
       ensure_trace "$trace_c" --packets "$(n 10000000)" --flows "$(n 10000)" --seed 7
       path[b]="$trace_b"; desc[b]="$b_desc" ;;
    a-whole)
       ensure_trace "$trace_a_whole" --packets "$(n 10000000)" --flows "$(n 100000)" --seed 7 "${whole[@]}"
       path[$t]="$trace_a_whole"; desc[$t]="a, frames whole: gen --packets $(n 10000000) --flows $(n 100000) --seed 7 ${whole[*]}" ;;
    b-whole)
       [ "$has_syn_flood" -eq 1 ] || { echo "b-whole needs gen --syn-flood" >&2; exit 2; }
       ensure_trace "$trace_b_whole" "${b_args[@]}" "${whole[@]}"
       path[$t]="$trace_b_whole"; desc[$t]="b, frames whole: gen ${b_args[*]} ${whole[*]}" ;;
    a-ng|b-ng)
       [ "$has_pcapng" -eq 1 ] || { echo "$t needs gen --format pcapng" >&2; exit 2; }
       if [ "$t" = a-ng ]; then
         ensure_trace "$trace_a_ng" --packets "$(n 10000000)" --flows "$(n 100000)" --seed 7 "${ng[@]}"
         path[$t]="$trace_a_ng"; desc[$t]="a as pcapng: gen --packets $(n 10000000) --flows $(n 100000) --seed 7 ${ng[*]}"
       else
         [ "$has_syn_flood" -eq 1 ] || { echo "b-ng needs gen --syn-flood" >&2; exit 2; }
         ensure_trace "$trace_b_ng" "${b_args[@]}" "${ng[@]}"
         path[$t]="$trace_b_ng"; desc[$t]="b as pcapng: gen ${b_args[*]} ${ng[*]}"
       fi ;;
    *) echo "unknown trace '$t' in TRACES (a, b, a-whole, b-whole, a-ng, b-ng)" >&2; exit 2 ;;
  esac
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Page cache: a file idle for ~30 s may be evicted; read it right before each timed run.
warm() { cat "$1" > /dev/null; }

# measure OUT CMD...: runs CMD (stdout to OUT); sets secs and peak_kib (wall
# time, peak RSS). Not in a subshell, so a failure stops the script.
measure() {
  local out="$1"; shift
  if ! /usr/bin/time -f "%e %M" -o "$tmp/time" "$@" > "$out" 2> "$tmp/stderr"; then
    echo "failed: $*" >&2
    cat "$tmp/stderr" "$tmp/time" >&2
    exit 1
  fi
  read -r secs peak_kib < <(tail -n 1 "$tmp/time")
}

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
max() { printf '%s\n' "$@" | sort -g | tail -n 1; }

threads_note=""
[ "$has_threads" -eq 1 ] || threads_note=" (no --threads yet)"
# Row names, in run order, and the command of each (TRACE is substituted).
# Rows 0-4 are always there (the code below refers to the floor, the exact
# counter and flowsketch --threads 1 by number); optional rows follow.
names=("page cache (cat)" "libpcap floor (pcap_floor)" "flowsketch --threads 1$threads_note"
       "flowsketch --threads 2$threads_note" "exact hash map (exact_counter)")
rows=(cat floor t1 t2 exact)
if [ "$has_no_flows" -eq 1 ]; then
  names+=("flowsketch --threads 1 --no-flows" "flowsketch --threads 2 --no-flows")
  rows+=(t1-no-flows t2-no-flows)
fi
if [ "${PIPE:-0}" = 1 ]; then
  names+=("libpcap floor, from a pipe" "flowsketch --threads 1, from a pipe" "flowsketch --threads 2, from a pipe")
  rows+=(floor-pipe t1-pipe t2-pipe)
fi
if [ -n "$baseline" ]; then
  names+=("baseline --threads 1" "baseline --threads 2")
  rows+=(baseline-t1 baseline-t2)
fi
extra_sets=()
if [ -n "${EXTRA:-}" ]; then
  IFS='|' read -r -a extra_sets <<< "$EXTRA"
  for i in "${!extra_sets[@]}"; do
    names+=("flowsketch --threads 1 ${extra_sets[i]}" "flowsketch --threads 2 ${extra_sets[i]}")
    rows+=("extra-t1-$i" "extra-t2-$i")
  done
fi
if [ "${LOAD:-0}" -gt 0 ]; then
  hogs=()
  for _ in $(seq "$LOAD"); do (while :; do :; done) & hogs+=($!); done
  trap 'kill "${hogs[@]}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
  echo "Every row ran beside $LOAD busy loops." >&2
fi
command_for() {  # command_for ROW TRACE → sets cmd array
  local fs=("$flowsketch" -r "$2" --format json)
  case "${rows[$1]}" in
    cat) cmd=(cat "$2") ;;
    floor) cmd=("$floor" "$2") ;;
    t1) if [ "$has_threads" -eq 1 ]; then cmd=("${fs[@]}" --threads 1); else cmd=("${fs[@]}"); fi ;;
    t2) if [ "$has_threads" -eq 1 ]; then cmd=("${fs[@]}" --threads 2); else cmd=("${fs[@]}"); fi ;;
    exact) cmd=("$exact" "$2") ;;
    t1-no-flows) cmd=("${fs[@]}" --threads 1 --no-flows) ;;
    t2-no-flows) cmd=("${fs[@]}" --threads 2 --no-flows) ;;
    floor-pipe) cmd=(bash -c 'cat "$1" | "$2" -' _ "$2" "$floor") ;;
    t1-pipe) cmd=(bash -c 'cat "$1" | "$2" -r - --format json --threads 1' _ "$2" "$flowsketch") ;;
    t2-pipe) cmd=(bash -c 'cat "$1" | "$2" -r - --format json --threads 2' _ "$2" "$flowsketch") ;;
    extra-t1-*) read -r -a extra <<< "${extra_sets[${rows[$1]#extra-t1-}]}"; cmd=("${fs[@]}" --threads 1 "${extra[@]}") ;;
    extra-t2-*) read -r -a extra <<< "${extra_sets[${rows[$1]#extra-t2-}]}"; cmd=("${fs[@]}" --threads 2 "${extra[@]}") ;;
    baseline-t1) cmd=("$baseline" -r "$2" --format json --threads 1) ;;
    baseline-t2) cmd=("$baseline" -r "$2" --format json --threads 2) ;;
  esac
}

md="out/bench/results$suffix.md"  # a SCALE run never overwrites the full-size results
{
  echo "# bench/replay_benchmark.sh results"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)," \
       "$(nproc) CPUs, build \`$build\`, $reps alternating repetitions, median wall time, peak RSS the max over repetitions."
  [ -z "$baseline" ] || echo "Baseline rows: \`$baseline\`"
} > "$md"

declare -A rss_of  # "TRACE ROW" → max peak RSS (KiB)
for t in $traces; do
  trace="${path[$t]}"
  declare -a times=() rss=()  # per row: space-separated lists
  for ((r = 0; r < ${#names[@]}; r++)); do times[r]=""; rss[r]=""; done
  packets=""
  for ((i = 0; i < reps; i++)); do
    for ((r = 0; r < ${#names[@]}; r++)); do
      command_for "$r" "$trace"
      warm "$trace"
      # cat's output is the trace itself: into a file it would time writing 1 GB too.
      if [ "${rows[r]}" = cat ]; then measure /dev/null "${cmd[@]}"; else measure "$tmp/out" "${cmd[@]}"; fi
      times[r]+=" $secs"; rss[r]+=" $peak_kib"
      if [ "$r" -eq 1 ] && [ -z "$packets" ]; then packets=$(awk '{print $1; exit}' "$tmp/out"); fi
      if [ "$r" -eq 4 ] && [ "$i" -eq 0 ]; then cp "$tmp/out" "$tmp/exact-$t"; fi
    done
  done
  # shellcheck disable=SC2086  # the lists are meant to split
  floor_med=$(median ${times[1]})
  bytes=$(stat -c %s "$trace")
  echo
  echo "trace $t: $trace (${desc[$t]}; $packets packets, $((bytes / 1048576)) MiB), $reps alternating repetitions, median"
  echo "exact flows: $(awk 'NR == 1 {print $NF}' "$tmp/exact-$t")"
  printf '%-44s %9s %9s %12s %9s\n' "program" "seconds" "Mpps" "peak RSS" "vs floor"
  {
    echo
    echo "## trace $t: \`$trace\`"
    echo
    echo "${desc[$t]}; $packets packets, $((bytes / 1048576)) MiB, $(awk 'NR == 1 {print $NF}' "$tmp/exact-$t") flows (exact)."
    echo
    echo "| program | seconds | Mpps | peak RSS | ratio to the floor |"
    echo "|---|---:|---:|---:|---:|"
  } >> "$md"
  for ((r = 0; r < ${#names[@]}; r++)); do
    # shellcheck disable=SC2086
    med=$(median ${times[r]})
    # shellcheck disable=SC2086
    peak=$(max ${rss[r]})
    rss_of["$t $r"]="$peak"
    awk -v name="${names[r]}" -v p="$packets" -v s="$med" -v f="$floor_med" -v m="$peak" -v md="$md" 'BEGIN {
      mpps = s > 0 ? sprintf("%.2f", p / s / 1e6) : "inf"
      ratio = f > 0 ? sprintf("%.2f", s / f) : "n/a"
      printf "%-44s %9.2f %9s %8.1f MiB %9s\n", name, s, mpps, m / 1024, ratio
      printf "| %s | %.2f | %s | %.1f MiB | %s |\n", name, s, mpps, m / 1024, ratio >> md
    }'
  done
done

# Peak RSS must not depend on the flows: flowsketch on 10k flows vs the flood.
case " $traces " in
  *" b "*)
    command_for 2 "$trace_c"
    warm "$trace_c"
    measure "$tmp/out" "${cmd[@]}"
    c_rss="$peak_kib"
    b_rss="${rss_of["b 2"]}"
    line=$(awk -v c="$c_rss" -v b="$b_rss" -v flows="${C10K:+$C10K}${C10K:-$(n 10000) flows}" 'BEGIN {
      diff = (b - c) / c * 100
      ok = (diff <= 10 && diff >= -10 && b <= 65536 && c <= 65536) ? "met" : "NOT met"
      printf "flowsketch peak RSS: %.1f MiB on c10k (%s) vs %.1f MiB on b (flood): %+.1f%%; target within 10%% and <= 64 MiB: %s", c / 1024, flows, b / 1024, diff, ok
    }')
    echo
    echo "$line (single run on c10k, max of $reps on b; ${names[2]})"
    { echo; echo "$line (single run on c10k, max of $reps on b; ${names[2]})."; } >> "$md"
    ;;
esac
echo
echo "Markdown: $md"
