// The truth files of `flowsketch gen`: one TSV line per flow with its exact
// counts (and, with --lifetimes, its times, ending and silences), in a fixed
// total order; docs/gen.md describes the format.
#pragma once

#include <vector>

#include "src/gen/buffered_file.hpp"
#include "src/gen/flows.hpp"
#include "src/gen/gen_config.hpp"
#include "src/gen/lifetime_scheduler.hpp"
#include "src/gen/scenario_traffic.hpp"
#include "src/gen/syn_flood.hpp"
#include "src/gen/traffic_generator.hpp"

namespace flowsketch::gen {

/// Total order of flows in truth files: packets descending, then proto, src, dst
/// (numeric, IPv4 before IPv6), sport, dport — as scripts/tshark_truth.py sorts.
bool truth_order(const Flow& a, const Flow& b) noexcept;

/// The flood flows of a run, sorted by source (their truth order).
using FloodLog = std::vector<SynFlood::Packet>;

/// Stationary truth: the header lines, then proto, src, dst, sport, dport,
/// packets, bytes per flow, flood flows included. With scenarios, a header
/// line per scenario and two more columns: vlan, scenario.
void write_truth(BufferedFile& file, const GenConfig& config, const std::vector<Flow>& flows,
                 const FloodLog& flood, const GenSummary& summary, const ScenarioTraffic& scenarios);

/// Lifetime truth: the stationary columns, then first_ns, last_ns, end_flag,
/// pause_ns, gaps (semantics in the header lines and docs/gen.md).
void write_lifetime_truth(BufferedFile& file, const GenConfig& config,
                          const std::vector<Flow>& flows, const LifetimeScheduler& scheduler,
                          const FloodLog& flood, const GenSummary& summary);

}  // namespace flowsketch::gen
