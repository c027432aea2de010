// The Report value: what one window measured, with the bounds that make each
// number trustworthy. Renderers consume it; nothing here does I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/flow_measurement.hpp"

namespace flowsketch::reports {

enum class ReportKind { interval, final_report };

struct SkipCount {
    std::string reason;  // stable snake_case name, e.g. "non_ip"
    std::uint64_t count = 0;
};

struct SketchDescription {
    std::string variant;  // "kirsch-mitzenmacher" or "standard"
    double epsilon = 0;   // additive error factor: lower = estimate − ε·N
    double delta = 0;     // probability that a true count lies below `lower`
    std::uint32_t width = 0;
    std::uint32_t depth = 0;
    bool conservative_update = false;
    std::uint64_t memory_bytes = 0;  // whole measurement state, fixed by configuration
};

struct Report {
    ReportKind kind = ReportKind::interval;
    double start = 0;  // Unix seconds (interval: nominal boundary; final: first frame)
    double end = 0;    // Unix seconds (interval: nominal boundary; final: last frame)
    std::uint64_t frames = 0;   // all frames read (after the BPF filter)
    std::uint64_t packets = 0;  // IP packets keyed to a flow
    std::uint64_t bytes = 0;    // their wire lengths
    std::vector<SkipCount> skipped;  // every reason, zeros included
    SketchDescription sketch;
    std::vector<core::HeavyHitter> top_packets;  // largest first
    std::vector<core::HeavyHitter> top_bytes;
    bool truncated = false;             // an input ended early or was damaged
    std::vector<std::string> warnings;  // human-readable, one per problem
};

const char* kind_name(ReportKind kind) noexcept;

/// Name of an IP protocol for people ("tcp", "udp", "icmp", ...; else the number).
std::string protocol_name(std::uint8_t protocol);

}  // namespace flowsketch::reports
