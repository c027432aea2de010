// Exact counting beside the sketches (--verify): every key's packets and
// bytes under every key spec, every distinct item of the specs that count
// them, and the flow lifecycle by a map of each flow's last generation. It
// holds what the sketches exist to avoid holding, so each table is refused
// past a fixed number of entries rather than allowed to grow without end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/key/flow_key.hpp"
#include "core/key/key_spec.hpp"
#include "core/lifecycle/sizing.hpp"
#include "core/measure/packet_record.hpp"
#include "core/measure/window.hpp"

namespace flowsketch::core {

struct FlowKeyHasher {
    std::size_t operator()(const FlowKey& key) const noexcept;
};

struct ExactCount {
    std::uint64_t packets = 0;
    std::uint64_t bytes = 0;
};

/// One key spec's exact counts in one window.
struct ExactKeyCounts {
    KeySpec spec = KeySpec::five_tuple();
    std::unordered_map<FlowKey, ExactCount, FlowKeyHasher> counts;
    /// Specs that count distinct items: each key's items (their field hashes).
    std::unordered_map<FlowKey, std::unordered_set<std::uint64_t>, FlowKeyHasher> distinct;
    std::uint64_t distinct_pairs = 0;  // (key, item) pairs in all
};

/// The exact flow lifecycle of a window, with the idle timeout and the
/// generation clock of FlowLifecycle (docs/flow-lifecycle.md): a flow is
/// active while its last packet's generation is among the current one and
/// the G before it, and expires at the boundary that starts generation
/// last + G + 1. For the run, new, expired and ended are the intervals' sums
/// (as the estimates are) and active is as of now.
struct ExactFlowCounts {
    std::uint64_t new_flows = 0;
    std::uint64_t active = 0;
    std::uint64_t expired = 0;
    std::uint64_t ended = 0;
};

/// What a window counted exactly.
struct ExactWindow {
    std::uint64_t packets = 0;
    std::uint64_t bytes = 0;
    std::vector<const ExactKeyCounts*> keys;  // [0] the 5-tuple, then the extra key specs
    bool has_flows = false;
    ExactFlowCounts flows;
};

class ExactCounter {
public:
    /// `extra_keys` as the measurement's; `lifecycle` null when flows are
    /// not tracked. Each table (a key spec's keys in a window, its distinct
    /// pairs, the lifecycle's flows) holds at most `max_entries`.
    ExactCounter(const std::vector<KeySpec>& extra_keys, const FlowLifecycleConfig* lifecycle,
                 std::uint64_t max_entries, std::uint64_t hash_seed);

    /// Counts the packets as FlowMeasurement does (the 5-tuple and the
    /// lifecycle without the VLAN id). Returns false, counting nothing more,
    /// once a table would pass max_entries: exceeded() names it.
    bool add_batch(std::span<const PacketRecord> packets);
    /// Time passes without packets (FlowMeasurement::advance_to).
    void advance_to(std::int64_t timestamp_ns);
    /// Closes the interval: its counts stay in the run's.
    void start_new_interval();

    /// The window's counts; valid until the next call that changes them.
    ExactWindow window(Window window) const;

    /// Bytes the tables hold: entries and bucket arrays, as allocated.
    std::size_t memory_bytes() const noexcept;
    std::uint64_t max_entries() const noexcept { return max_entries_; }
    /// The table that passed max_entries (empty while none has).
    const std::string& exceeded() const noexcept { return exceeded_; }

private:
    struct Lifecycle {
        std::int64_t period_ns = 1;
        std::int64_t generations = 8;
        bool started = false;
        std::int64_t gen_start_ns = 0;
        std::int64_t next_boundary_ns = 0;
        std::int64_t current = 0;         // generations advanced since the first packet
        std::int64_t interval_start = 0;  // the generation at the interval's start
        std::unordered_map<FlowKey, std::int64_t, FlowKeyHasher> last;  // flow → last generation
        std::unordered_set<FlowKey, FlowKeyHasher> ended;               // this interval's
        ExactFlowCounts interval;  // new and expired so far (active, ended at the query)
        ExactFlowCounts closed;    // the closed intervals' sums
    };
    bool count(std::vector<ExactKeyCounts>& window, const PacketRecord& packet, const FlowKey& five_tuple,
               const char* window_name);
    bool observe(const FlowKey& flow, std::int64_t timestamp_ns, std::uint8_t tcp_flags);
    void advance_clock(std::int64_t timestamp_ns) noexcept;
    ExactFlowCounts interval_flows() const;
    bool refuse(const std::string& table);

    std::uint64_t max_entries_;
    std::uint64_t hash_seed_;
    std::vector<ExactKeyCounts> interval_;
    std::vector<ExactKeyCounts> run_;
    std::uint64_t interval_packets_ = 0;
    std::uint64_t interval_bytes_ = 0;
    std::uint64_t run_packets_ = 0;
    std::uint64_t run_bytes_ = 0;
    bool track_flows_ = false;
    Lifecycle life_;
    std::string exceeded_;
};

}  // namespace flowsketch::core
