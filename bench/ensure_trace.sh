# Sourced by the benchmarks (bash) that replay generated traces.
#
#   ensure_trace PATH GEN-ARGS...
# generates PATH with `$flowsketch gen GEN-ARGS` (and its truth, PATH.truth.tsv) unless it
# exists with the same recipe (PATH.cmd). Written under another name first, so that an
# interrupted run leaves no trace that looks complete.
ensure_trace() {
  local path="$1"; shift
  local recipe="$*"
  if [ -f "$path" ] && { [ ! -f "$path.cmd" ] || [ "$(cat "$path.cmd")" = "$recipe" ]; }; then
    return 0
  fi
  echo "generating $path: flowsketch gen --out $path $recipe" >&2
  mkdir -p "$(dirname "$path")"
  /usr/bin/time -f "gen: %e s wall, %M KiB peak RSS" \
    "$flowsketch" gen --out "$path.partial" --truth "$path.truth.tsv" "$@" >&2
  mv "$path.partial" "$path"
  echo "$recipe" > "$path.cmd"
}
