// The configuration of a `flowsketch gen` run (GenConfig, with its lifetime
// part), the limits the command line enforces, and the command line that
// reproduces a configuration.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/gen/scenario.hpp"
#include "src/gen/size_mix.hpp"

namespace flowsketch::gen {

/// Flow lifetimes (`--lifetimes`). Times are seconds of packet time.
struct LifetimeConfig {
    bool enabled = false;
    /// Poisson arrivals of new flows per second; 0: rate * flows / packets, so
    /// the run spans about packets / rate seconds as in the stationary mode.
    double flow_rate = 0;
    double duration_mean = 1.0;  // exponential; first to last packet, pause excluded
    double idle_gap_fraction = 0.25;  // of flows with >= 2 packets: pause once
    double idle_gap = 1.0;            // pause uniform in [0.5, 1.5] * idle_gap
    double fin_fraction = 0.6;        // of TCP flows: last packet carries FIN
    double rst_fraction = 0.1;        // of TCP flows: last packet carries RST
    /// The truth lists every silence longer than this; < 0: idle_gap / 4.
    double gap_min = -1;
};

struct GenConfig {
    std::string out_path;
    std::string truth_path;
    std::uint64_t packets = 1'000'000;
    std::uint64_t flows = 10'000;
    double zipf = 1.1;
    std::vector<SizeBin> sizes = default_size_mix();
    double rate = 100'000;  // mean packets per second of packet time
    double ipv6_fraction = 0.2;
    double vlan_fraction = 0;
    double tcp_fraction = 0.8;
    std::uint32_t snaplen = 128;
    bool pcapng = false;                  // `--format pcapng`: the capture as pcapng, not classic pcap
    std::uint64_t start = 1'700'000'000;  // UNIX seconds of the first packet
    std::uint64_t seed = 1;
    LifetimeConfig life;
    /// `--syn-flood`: this many extra single-packet SYN flows (SynFlood), on top
    /// of (not counted in) `packets`; 0: none, the same bytes as without the option.
    std::uint64_t syn_flood = 0;
    /// `--scenario`: attacks and an onset mixed into the stationary traffic
    /// (ScenarioTraffic), on top of `packets`; none: the same bytes as without.
    std::vector<Scenario> scenarios;
};

/// `config.life` with the defaults that depend on other options filled in
/// (flow_rate > 0, gap_min >= 0).
LifetimeConfig resolved_lifetimes(const GenConfig& config);

/// Limits the command line enforces: memory grows with flows and flood flows
/// (per-flow costs in docs/gen.md, "Cost").
inline constexpr std::uint64_t max_flows = 50'000'000;
inline constexpr std::uint64_t max_packets = std::uint64_t{1} << 40;
/// --lifetimes counts a flow's packets in 32 bits to keep its per-flow record small.
inline constexpr std::uint64_t max_lifetime_packets = 0xffff'ffff;
inline constexpr std::uint32_t max_snaplen = 262'144;
/// --syn-flood keeps 16 bytes per flood flow (its source and time, for the truth).
inline constexpr std::uint64_t max_syn_flood = 50'000'000;

/// The command line that reproduces `config`'s content (output paths left out,
/// as they do not change a byte of it).
std::string canonical_command(const GenConfig& config);

}  // namespace flowsketch::gen
