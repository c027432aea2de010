#!/usr/bin/env bash
# The whole test suite: install, then build and run ctest twice — a normal
# optimised build and an AddressSanitizer+UndefinedBehaviorSanitizer build.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
jobs="$(nproc)"

echo "== build (RelWithDebInfo, -Werror)"
./scripts/build.sh build -DFLOWSKETCH_BUILD_TESTS=ON
echo "== tests"
(cd build && ctest --output-on-failure -j"$jobs" --timeout 600)

echo "== build (ASan+UBSan)"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
  -DFLOWSKETCH_SANITIZE=ON -DFLOWSKETCH_BUILD_TESTS=ON >/dev/null
cmake --build build-asan -j"$jobs"
echo "== tests under ASan+UBSan"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --output-on-failure -j"$jobs" --timeout 900)
./scripts/fuzz.sh 60  # bounded libFuzzer run of every target from its corpus
