// The Report value: what one window measured, with the bounds that make each
// number trustworthy. Renderers consume it; nothing here does I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/measure/window_value.hpp"
#include "core/verify/verification.hpp"

namespace flowsketch::reports {

enum class ReportKind { interval, final_report };

/// Frames not keyed, by reason (stable snake_case name, e.g. "non_ip").
using SkipCount = core::NamedCount;

struct SketchDescription {
    std::string variant;  // "kirsch-mitzenmacher" or "standard"
    double epsilon = 0;   // additive error factor: lower = estimate − ε·N
    double delta = 0;     // probability that a true count lies below `lower`
    std::uint32_t width = 0;
    std::uint32_t depth = 0;
    bool conservative_update = false;
    std::uint64_t memory_bytes = 0;  // whole measurement state, fixed by configuration
};

/// The description of a sketch built with `params`, for the report header.
SketchDescription describe_sketch(const core::CountMinParams& params, std::uint64_t memory_bytes);

/// The flow lifecycle: seen / new / active / expired / ended flows, from a
/// timestamp Bloom filter (docs/flow-lifecycle.md), each with its error.
struct FlowSection {
    core::FlowCounts counts;
    std::string seen_filter;        // "blocked", "standard" or "two-choice"
    double idle_timeout = 0;        // seconds
    std::uint32_t generations = 0;  // G: a flow expires T..T+T/G after its last packet
    std::uint64_t max_flows = 0;    // planned concurrently active flows
    std::uint64_t memory_bytes = 0;
};

/// Tunnelled frames (docs/decoding.md). Both lists are empty when the window
/// met no tunnel, and otherwise name every type and reason, zeros included.
struct TunnelSection {
    /// Frames keyed by an inner flow, per tunnel type crossed ("gre", "erspan",
    /// "vxlan", "geneve", "ip_in_ip", "gtp_u").
    std::vector<core::NamedCount> inner;
    /// Frames keyed by an outer header because a tunnel's inner packet could
    /// not be keyed, by reason (the skip reasons' names, and "truncated_tunnel",
    /// "invalid_tunnel", "tunnel_limit").
    std::vector<core::NamedCount> outer_keyed;
};

/// One live interface's share of a report (live capture only).
using InterfaceReport = core::InterfaceCounts;

/// One interface of a replayed pcapng file: listed when a file has more
/// than one, beside what live capture lists.
struct FileInterfaceReport {
    std::string name;          // if_name, else "#index"
    std::string file;          // the capture file, as given
    std::uint32_t index = 0;   // in the file, in order across its sections
    std::uint32_t section = 0; // its section, from 0
    std::uint32_t id = 0;      // its interface id within the section
    int link_type = 0;         // DLT_* value
    std::string link_type_name;  // libpcap's name of it (EN10MB, LINUX_SLL, ...)
    std::uint64_t frames = 0;  // frames read from it (after the filter)
    std::uint64_t unsupported_link_type = 0;  // of them, not decoded: link type not decoded
    std::uint64_t unfiltered = 0;  // not counted: the filter does not compile for its link type
    /// The file's own counters for the interface (its last Interface
    /// Statistics Block), where the file has them.
    std::optional<std::uint64_t> if_received;
    std::optional<std::uint64_t> if_dropped;
    std::optional<std::uint64_t> os_dropped;
};

/// The ClickHouse export (--clickhouse) so far in the run, as of the report:
/// every count is cumulative.
struct ClickHouseExportCounts {
    std::uint64_t delivered = 0;    // windows whole in ClickHouse
    std::uint64_t undelivered = 0;  // windows given up: pushed out of the full queue, or left at the end
    std::uint64_t spilled = 0;      // of those, written to the spill directory as snapshots
    std::uint64_t queued = 0;       // windows waiting now
    std::uint64_t retries = 0;      // failed delivery attempts (each retried after a backoff)
};

struct Report {
    ReportKind kind = ReportKind::interval;
    /// An interval report cut short by the end of the run (the last of a
    /// replay, or of a live capture that was stopped): its counts cover less
    /// than an interval. Not rendered by the text, JSON and CSV formats.
    bool partial = false;
    double start = 0;  // Unix seconds (interval: nominal boundary; final: first frame)
    double end = 0;    // Unix seconds (interval: nominal boundary; final: last frame)
    std::uint64_t frames = 0;   // all frames read (after the BPF filter)
    std::uint64_t packets = 0;  // IP packets keyed to a flow
    std::uint64_t bytes = 0;    // their wire lengths
    std::vector<SkipCount> skipped;  // every reason, zeros included
    TunnelSection tunnels;
    SketchDescription sketch;
    core::TopList top_packets;  // the 5-tuple's, largest first
    core::TopList top_bytes;
    core::ChangeList changes_packets;  // interval reports: the 5-tuples that changed most
    core::ChangeList changes_bytes;
    std::vector<core::KeyTops> keys;  // the extra key specs' lists (--key), in order
    bool has_distinct_totals = false;  // a key spec counts distinct items
    core::DistinctTotals distinct_totals;
    bool has_flows = false;
    FlowSection flows;
    std::vector<InterfaceReport> interfaces;  // live capture: per-interface totals and drops
    bool counts_are_lower_bounds = false;     // frames were dropped before flowsketch saw them
    std::vector<FileInterfaceReport> file_interfaces;  // replays of multi-interface pcapng
    bool no_packet_time = false;  // a replay that read no frame: start and end are no time
    bool truncated = false;             // an input ended early or was damaged
    std::vector<std::string> warnings;  // human-readable, one per problem
    /// Which probe measured (--probe; the host name by default), or the probes a
    /// merged report sums, comma-separated. Empty: not named (renderers omit it
    /// where a format has no field for it).
    std::string probe;
    /// The hash seed of every sketch (--seed): probes merge only at the same seed.
    std::uint64_t seed = 0;
    /// --verify: the window's answers checked against exact counts (docs/verify.md).
    bool has_verify = false;
    core::VerifySection verify;
    /// Measuring runs with --clickhouse: how the export went so far.
    bool has_clickhouse = false;
    ClickHouseExportCounts clickhouse;
};

const char* kind_name(ReportKind kind) noexcept;

}  // namespace flowsketch::reports
