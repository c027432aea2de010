#!/usr/bin/env bash
# What the rollups save `flowsketch query`: trace a (100 s of packet time)
# exported at --interval 1 by two probes to a ClickHouse server of its own, then
# `query --interval 0` (one report over all) and `query --interval 60` (a report
# a minute) timed, first with the rollups holding exactly the windows (whole
# minutes and hours read from sketch_minute and sketch_hour), then after a
# twin of one window per probe and minute is inserted into sketch_rows, as a
# retried insert leaves one, so that every bucket is read from the sketch
# rows. The reports of both must be the same bytes; the script fails otherwise.
#
# usage: bench/clickhouse_query.sh [BUILD_DIR] [REPS]
#   BUILD_DIR  default build (needs src/flowsketch)
#   REPS       repetitions of each query, default 5
# Environment: A=FILE trace a (default out/bench/a.pcap, generated there if
# missing); CLICKHOUSE=PATH the server binary (default clickhouse-server).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
reps="${2:-5}"
flowsketch="$build/src/flowsketch"
trace="${A:-out/bench/a.pcap}"
server_bin="${CLICKHOUSE:-clickhouse-server}"
[ -x "$flowsketch" ] || { echo "missing $flowsketch: build with ./scripts/build.sh $build" >&2; exit 2; }
command -v "$server_bin" >/dev/null || { echo "no $server_bin: apt-get install clickhouse-server" >&2; exit 2; }
source bench/ensure_trace.sh
ensure_trace "$trace" --packets 10000000 --flows 100000 --seed 7

source bench/private_clickhouse.sh
start_private_clickhouse "$server_bin"
sql() { curl -fsS --data-binary "$1" "$url"; }
"$flowsketch" clickhouse-schema --clickhouse "$url" >/dev/null
for probe in edge-1 edge-2; do
  "$flowsketch" -r "$trace" -q --interval 1 --format json --probe "$probe" --clickhouse "$url" >/dev/null
done
windows="$(sql "SELECT count() FROM flowsketch.intervals")"
bytes="$(sql "SELECT sum(data_compressed_bytes) FROM system.parts
              WHERE database = 'flowsketch' AND table = 'sketch_rows' AND active")"

# Median seconds of REPS runs of one query; its reports into FILE.
timed_query() {
  local file="$1"; shift
  python3 - "$reps" "$file" "$flowsketch" query --clickhouse "$url" --format json "$@" <<'EOF'
import statistics, subprocess, sys, time
reps, out, command = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
times = []
for _ in range(reps):
    start = time.monotonic()
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    times.append(time.monotonic() - start)
    if result.returncode != 0:
        sys.exit(f"exit {result.returncode}: {result.stderr.decode().strip()}")
open(out, "wb").write(result.stdout)
print(f"{statistics.median(times):.3f}")
EOF
}

declare -A rollups rows
for interval in 0 60; do rollups[$interval]="$(timed_query "$work/rollups-$interval.json" --interval "$interval")"; done
sql "INSERT INTO flowsketch.sketch_rows SELECT * FROM flowsketch.sketch_rows WHERE (probe, start_ns) IN
     (SELECT probe, min(start_ns) FROM flowsketch.sketch_rows GROUP BY probe, intDiv(start_ns, 60000000000))"
for interval in 0 60; do
  rows[$interval]="$(timed_query "$work/rows-$interval.json" --interval "$interval")"
  cmp -s "$work/rollups-$interval.json" "$work/rows-$interval.json" ||
    { echo "--interval $interval: the reports from the rollups and from the sketch rows differ" >&2; exit 1; }
done
echo "trace $trace, 2 probes, $windows windows in ClickHouse ($bytes bytes of sketch_rows on disk), median of $reps"
echo "| query | from the rollups, s | from the sketch rows, s | ratio |"
echo "|---|---:|---:|---:|"
for interval in 0 60; do
  printf '| `--interval %s` | %s | %s | %.1f |\n' "$interval" "${rollups[$interval]}" "${rows[$interval]}" \
    "$(echo "${rows[$interval]} / ${rollups[$interval]}" | bc -l)"
done
