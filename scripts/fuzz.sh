#!/usr/bin/env bash
# Bounded fuzzing for CI: builds the libFuzzer targets with clang-14 into build-fuzz/ and fuzzes
# each for SECONDS (default 60) from its saved corpus (tests/fuzz/corpus/<target>/), with
# ASan+UBSan. Fails on any crash, leak, timeout or out-of-memory, unless the crash matches a
# known, reported bug listed in tests/fuzz/known_crashes.txt (then it says so and goes on).
# New inputs go to a scratch directory, not into the repository; a crasher is kept under
# build-fuzz/artifacts/ — minimise it, add it to the corpus and fix the bug.
#   ./scripts/fuzz.sh [SECONDS_PER_TARGET]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
targets=(decode capture_file_fuzz sketch_deserialize_fuzz)
build=build-fuzz
jobs="$(nproc)"

echo "== build fuzz targets (clang-14, libFuzzer, ASan+UBSan)"
# -Werror stays with the gcc and clang builds of scripts/test.sh; here a warning must not keep
# new code away from the fuzzer.
CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DFLOWSKETCH_FUZZ=ON -DFLOWSKETCH_BUILD_TESTS=ON -DFLOWSKETCH_WERROR=OFF >/dev/null
cmake --build "$build" -j"$jobs" --target "${targets[@]}"

known_file=tests/fuzz/known_crashes.txt
known_patterns() { grep -v -e '^#' -e '^[[:space:]]*$' "$known_file" 2>/dev/null || true; }

mkdir -p "$build/artifacts"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

fuzz_one() {
  local target="$1" log="$scratch/$1.log"
  mkdir -p "$scratch/$target"
  # -timeout: one input running 10 s is a hang; -rss_limit_mb: a flood of memory is a bug.
  if "$build/tests/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$build/artifacts/$target-" \
      "$scratch/$target" "tests/fuzz/corpus/$target" >"$log" 2>&1; then
    echo "$target: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)"
    return 0
  fi
  local pattern
  while IFS= read -r pattern; do
    if grep -Eq -- "$pattern" "$log"; then
      echo "$target: stopped on a known bug ($known_file: $pattern)"
      grep -m1 -E 'runtime error|ERROR: ' "$log" || true
      return 0
    fi
  done < <(known_patterns)
  echo "$target: FAILED (log below; crasher in $build/artifacts/)"
  tail -n 60 "$log"
  return 1
}

echo "== fuzz each target for ${seconds}s"
status=0
pids=()
# Targets run side by side when there are cores for them, one after another otherwise.
for target in "${targets[@]}"; do
  fuzz_one "$target" &
  pids+=($!)
  if ((${#pids[@]} >= jobs)); then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
exit "$status"
