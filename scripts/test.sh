#!/usr/bin/env bash
# The whole test suite: install, then build and run ctest three times — a
# normal optimised build, an AddressSanitizer+UndefinedBehaviorSanitizer build,
# and a ThreadSanitizer build of the parts that run threads (the program, whose
# --threads 2 and lab runs the app and lab tests drive, the worker's tests, and
# the capture tests, which feed pipes from threads and signal a reading one).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
jobs="$(nproc)"

echo "== build (RelWithDebInfo, -Werror)"
./scripts/build.sh build -DFLOWSKETCH_BUILD_TESTS=ON
echo "== tests"
(cd build && ctest --output-on-failure -j"$jobs" --timeout 600)

echo "== build (ASan+UBSan)"
# -g1: line tables only, enough for the sanitizers' stack traces, and a quarter faster to build.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
  -DFLOWSKETCH_SANITIZE=ON -DFLOWSKETCH_BUILD_TESTS=ON >/dev/null
cmake --build build-asan -j"$jobs"
echo "== tests under ASan+UBSan"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# portable.app.* repeats the app tests on the portable kernels: the optimised build runs them,
# and under the sanitizers portable.core.* covers those kernels' memory.
(cd build-asan && ctest --output-on-failure -j"$jobs" --timeout 900 -E '^portable[.]app[.]')

echo "== build (ThreadSanitizer: the program, the app and the capture tests)"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
  -DFLOWSKETCH_SANITIZE_THREAD=ON -DFLOWSKETCH_BUILD_TESTS=ON >/dev/null
cmake --build build-tsan -j"$jobs" --target flowsketch flowsketch_app_tests flowsketch_capture_tests
echo "== app, lab and capture tests under ThreadSanitizer"
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
(cd build-tsan && ctest --output-on-failure -j"$jobs" --timeout 900 -R '^(app|lab|capture)[.]')
./scripts/fuzz.sh 60  # bounded libFuzzer run of every target from its corpus
