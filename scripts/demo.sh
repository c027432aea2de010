#!/usr/bin/env bash
# The main job on the sample captures: install, build, replay every capture
# in pcaps/ as one stream and print the report for a person.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh build -DFLOWSKETCH_BUILD_TESTS=OFF
inputs=()
for capture in pcaps/*.pcap pcaps/*.pcapng; do inputs+=(-r "$capture"); done
echo "== every sample capture as one stream (final report):"
./build/src/flowsketch "${inputs[@]}" --interval 0 --top 10
echo "== one capture, a report every 30 s of packet time, JSON Lines:"
./build/src/flowsketch -r pcaps/suricata-verify-output-eve-ftp-data.pcap --interval 30 --top 3 --format json
