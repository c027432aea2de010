// What one window (an interval, or the whole run) measured, as a value: each
// key spec's sketch of the window's packets and bytes with its heavy-hitter
// candidates, the frame totals and skip counts, the interfaces' counters and
// the flow lifecycle's answers with their bounds. Closing a window yields
// one; reports are rendered from it; values merge (sketches add, candidates
// unite and are ranked again on the sum) and serialise, as the sketches they
// hold do.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/key/key_spec.hpp"
#include "core/lifecycle/flow_lifecycle.hpp"
#include "core/measure/top_list.hpp"
#include "core/measure/window.hpp"
#include "core/sketch/count_min.hpp"
#include "core/sketch/distinct_sketch.hpp"

namespace flowsketch::core {

/// One extra key spec's lists in a window.
struct KeyTops {
    TopList top_packets;
    TopList top_bytes;
    std::uint64_t memory_bytes = 0;  // the key spec's state: sketch, cache, candidates
    /// Interval windows: the keys that changed most since the previous interval.
    ChangeList changes_packets;
    ChangeList changes_bytes;
    /// Specs that count distinct items: the keys with the most, and the
    /// distinct (key, item) pairs of the window in all.
    bool has_distinct = false;
    std::vector<DistinctBounds> distinct_packets;  // row by row of top_packets
    std::vector<DistinctBounds> distinct_bytes;    // row by row of top_bytes
    DistinctTopList top_distinct;
    DistinctBounds distinct_pairs;
};

/// Distinct flows, sources and destinations of a window, with their bounds
/// (counted when some key spec counts distinct items).
struct DistinctTotals {
    DistinctBounds flows;
    DistinctBounds sources;
    DistinctBounds destinations;
};

/// What a window measured, ranked: the form reports are rendered from.
struct WindowSummary {
    std::uint64_t packets = 0;
    std::uint64_t bytes = 0;
    TopList top_packets;  // the 5-tuple's, largest first
    TopList top_bytes;
    /// Interval windows: the 5-tuples that changed most since the previous interval.
    ChangeList changes_packets;
    ChangeList changes_bytes;
    std::vector<KeyTops> keys;  // one per extra key spec, in order
    bool has_distinct_totals = false;
    DistinctTotals distinct_totals;
    bool has_flows = false;     // the lifecycle is tracked
    /// The lifecycle's answers with their bounds. For the whole run, counts
    /// are summed over intervals and active is as of now.
    FlowCounts flows;
};

/// One key spec's part of a window.
struct KeyWindow {
    KeySpec spec = KeySpec::five_tuple();
    CountMinSketch sketch;  // lanes: the window's packets, bytes
    /// Keys (under spec) that may be heavy, by weight (packets, bytes).
    std::array<std::vector<FlowKey>, 2> candidates;
    /// Specs that count distinct items: the window's distinct sketch and the
    /// keys that may have the most.
    std::optional<DistinctSketch> distinct;
    std::vector<FlowKey> distinct_candidates;
    /// What each candidate counted exactly since it entered its set, and its
    /// upper bound, in the order of `candidates` (by weight). Empty when not
    /// known (a value serialised before version 4). After a merge, exact
    /// counts add (a key counted by one part only keeps that part's: still a
    /// lower bound of the sum) and upper bounds add where both parts have
    /// the key, and are dropped where only one has it.
    std::array<std::vector<CandidateCount>, 2> candidate_counts;

    /// The heaviest candidates by weight, at most top_k, estimated on the
    /// sketch and the candidates' exact counts (see rank_keys; keys sharing
    /// every cell flagged, their lower bound their exact count).
    TopList top(Weight weight, std::uint32_t top_k, std::uint64_t hash_seed) const;
};

/// Frames and drops of one interface (live capture) over a window.
struct InterfaceCounts {
    std::string name;
    std::uint64_t frames = 0;      // frames read from it (after the filter)
    std::uint64_t received = 0;    // libpcap ps_recv over the window
    std::uint64_t dropped = 0;     // ps_drop: dropped by the kernel for lack of buffer
    std::uint64_t if_dropped = 0;  // ps_ifdrop: dropped by the interface or driver
};

struct NamedCount {
    std::string name;
    std::uint64_t count = 0;
};

/// Adds a window's flow counts to those of the windows before it: new,
/// expired and ended flows and their bounds add (a union bound), the highest
/// fpr and any overfill are kept; `expired_variance` accumulates the squared
/// standard errors of expired. Active and fpr stay the sum's own.
void add_flow_counts(FlowCounts& sum, const FlowCounts& window, double& expired_variance);

struct WindowValue {
    Window window = Window::interval;
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    std::uint32_t top_k = 10;
    std::uint64_t hash_seed = 0;
    std::uint64_t frames = 0;              // every frame read, keyed or not
    std::vector<NamedCount> skipped;       // frames not keyed, by reason
    std::vector<InterfaceCounts> interfaces;
    std::vector<KeyWindow> keys;  // [0] the 5-tuple, then the extra key specs
    /// Distinct flows, sources and destinations (when a spec counts distinct
    /// items): three HyperLogLog counters' registers, in that order.
    std::vector<std::vector<std::uint8_t>> distinct_totals;
    bool has_flows = false;
    FlowCounts flows;

    std::uint64_t packets() const noexcept { return keys.empty() ? 0 : keys.front().sketch.total(0); }
    std::uint64_t bytes() const noexcept { return keys.empty() ? 0 : keys.front().sketch.total(1); }

    /// Ranks every key spec's candidates: what a report shows.
    WindowSummary summary() const;

    /// Adds another window of the same configuration (seed, key specs,
    /// sketch dimensions and scheme): sketches add cell by cell (exact),
    /// candidates unite, frames, skips and interface counters add, the span
    /// covers both. Flow counts add as for consecutive windows of one stream
    /// (new, expired and ended flows and their bounds add; active and fpr are
    /// the later window's). Throws std::invalid_argument naming what differs.
    void merge(const WindowValue& other);

    /// The value in the sketches' envelope (docs/serialization.md), kind 5.
    std::vector<std::uint8_t> serialize() const;
    /// Reads a serialised value back; throws FormatError naming what is wrong.
    static WindowValue deserialize(std::span<const std::uint8_t> bytes);
};

}  // namespace flowsketch::core
