#!/usr/bin/env bash
# Installs what flowsketch needs to build and test, from Debian 12 packages only.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

packages=(
  build-essential cmake ninja-build pkg-config   # toolchain
  libpcap-dev                                    # capture and BPF
  libboost-dev                                   # Asio and Beast (header-only)
  libcli11-dev libfmt-dev                        # command line, formatting
  libxxhash-dev                                  # XXH3: the one hash per packet
  libzstd-dev                                    # snapshots (--snapshot-dir) are zstd-compressed
  libgtest-dev nlohmann-json3-dev                # tests (JSON parser to check our output)
  libbenchmark-dev                               # micro-benchmarks
  clang libclang-rt-14-dev                       # libFuzzer builds of the fuzz targets
  python3                                        # corpus generators in tests/
  time                                           # /usr/bin/time: peak RSS in benchmarks
  tcpreplay iproute2 procps                      # live-capture test: veth pair in namespaces
  prometheus curl                                # monitoring test: a real Prometheus scrapes /metrics
  clickhouse-server clickhouse-client            # ClickHouse export and query tests: a real server per test
  groff-base                                     # install test: the man page renders without warnings
  chromium                                       # --html test: the page rendered in a headless browser
)
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
