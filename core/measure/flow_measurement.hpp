// The per-packet measurement: a list of aggregations (the 5-tuple first, then
// every extra key spec), each with Count-Min sketches of packets and bytes for
// the current interval and the whole run and heavy-hitter candidates for each,
// and the flow lifecycle. A packet's key is hashed once per key spec; every
// structure of that spec derives its indices from that hash.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/key/key_spec.hpp"
#include "core/lifecycle/flow_lifecycle.hpp"
#include "core/measure/aggregation.hpp"
#include "core/measure/distinct_totals.hpp"
#include "core/measure/packet_record.hpp"
#include "core/measure/top_list.hpp"
#include "core/measure/window.hpp"
#include "core/measure/window_value.hpp"
#include "core/sketch/count_min.hpp"

namespace flowsketch::core {

struct MeasurementConfig {
    CountMinParams sketch;          // lanes are set by the measurement
    std::uint32_t top_k = 10;       // heavy hitters reported per list
    std::uint32_t candidates = 0;   // candidate-set size; 0 = max(4·top_k, 64)
    std::uint64_t hash_seed = 0x666c6f77736b7463ULL;  // "flowsktc"
    /// Key specs measured beside the 5-tuple, each with its own sketch,
    /// cache and candidates (the 5-tuple is always measured: it drives the
    /// flow lifecycle and the reports' main lists).
    std::vector<KeySpec> extra_keys;
    /// The distinct sketches' dimensions, for the extra keys that count
    /// distinct items (`dst:distinct=src`).
    DistinctSketchParams distinct;
    bool track_flows = true;                 // the flow lifecycle (new/active/expired/ended)
    /// Keys whose packets are summed before they reach the sketches (see
    /// AggregationCache; a power of two, 0 = off). 8192 × 64 B stays in L2.
    std::uint32_t aggregation_slots = 8192;
    FlowLifecycleConfig lifecycle;
};

class FlowMeasurement {
public:
    /// add_batch measures its packets this many at a time, with scratch of
    /// about 100 KiB read in order: the batch size callers should hand it.
    /// Each chunk starts its prefetch pipelines (cache lines, filter blocks,
    /// sketch cells) cold, so a chunk must be long enough to hide that.
    static constexpr std::size_t chunk_packets = Aggregation::max_displaced;

    /// Throws std::invalid_argument on bad sketch parameters or top_k == 0.
    explicit FlowMeasurement(const MeasurementConfig& config);

    void add(const PacketRecord& packet) noexcept;
    /// `tags` are the packets' tunnel tags, one per packet, when keys_tunnel()
    /// (a `tunnel` or `+vni` spec reads them); otherwise empty.
    void add_batch(std::span<const PacketRecord> packets, std::span<const TunnelTag> tags = {}) noexcept;

    /// A batch's 5-tuple hashes, from which every 5-tuple structure locates
    /// its cells: the pure, per-key half of add_batch, which another thread
    /// can compute (prepare) while this one updates (add_prepared).
    struct PreparedBatch {
        std::vector<Hash128> hashes;
        std::vector<FlowKey> keys;  // scratch: the keys without their VLAN ids (keys_vlan())
    };
    void prepare(std::span<const PacketRecord> packets, PreparedBatch& out) const;
    /// add_batch() of packets that prepare() hashed (same result).
    void add_prepared(std::span<const PacketRecord> packets, const PreparedBatch& prepared,
                      std::span<const TunnelTag> tags = {}) noexcept;

    /// Moves the counts still summed in the aggregation caches into the
    /// sketches and offers their keys to the heavy-hitter candidates. The
    /// summaries and start_new_interval() do it first themselves.
    void flush_pending() noexcept;

    /// What a window measured, ranked: what reports render. Not const:
    /// pending counts are flushed first. Window::run is every interval so
    /// far, the current one included; its flow counts are summed over
    /// intervals, active as of now. Equal to window_value(window).summary(),
    /// without copying the sketches.
    WindowSummary summary(Window window);
    /// The same window as a value that merges and serialises: a copy of its
    /// sketch lanes and candidates (for snapshots and merging).
    WindowValue window_value(Window window);
    /// window_value() that copies the sketch lanes into the sketches of
    /// `recycled` (an earlier value of this measurement that is no longer
    /// needed) instead of allocating new ones: no allocation or page faults
    /// for the large part of a value at every window close.
    WindowValue window_value(Window window, WindowValue&& recycled);
    /// The parameters of a window value's sketches, key by key: the shape of
    /// the values that window_value(window, recycled) can be made in.
    std::vector<CountMinParams> window_value_params() const;

    /// Lets time pass without packets (expiries up to `timestamp_ns` count).
    void advance_to(std::int64_t timestamp_ns) noexcept;

    /// Closes the current interval: its counters stay in the run totals.
    void start_new_interval() noexcept;

    /// The lifecycle (null when not tracked).
    const FlowLifecycle* lifecycle() const noexcept { return lifecycle_.get(); }

    /// The aggregations: [0] the 5-tuple, then one per extra key spec. Call
    /// flush_pending() first for a complete picture of their sketches.
    const std::vector<Aggregation>& aggregations() const noexcept { return aggregations_; }
    const CountMinParams& sketch_params() const noexcept { return five_tuple().sketch().params(); }
    /// The 5-tuple's sketch (one lane per window and weight, see lane_of).
    const CountMinSketch& sketch() const noexcept { return five_tuple().sketch(); }
    const MeasurementConfig& config() const noexcept { return config_; }
    /// Whether an extra key spec keeps the VLAN id, which the decoder then
    /// writes into each key (capture::DecodeLimits::outer_vlan). The 5-tuple
    /// and the lifecycle still key every packet without it.
    bool keys_vlan() const noexcept { return keys_vlan_; }
    /// Whether an extra key spec keeps the tunnel id or endpoints (`+vni`,
    /// `tunnel`): the decoder then writes each packet's TunnelTag
    /// (capture::decode_frame with a tag) and add_batch takes them.
    bool keys_tunnel() const noexcept { return keys_tunnel_; }
    std::size_t memory_bytes() const noexcept;
    /// The part of memory_bytes() in Count-Min sketches, every key spec's.
    std::size_t sketch_memory_bytes() const noexcept;

    /// The state whose size the parameters choose, before anything is
    /// allocated: a command line can refuse a size asked for by mistake (a
    /// tiny δ, a huge max-flows) instead of running out of memory.
    struct Footprint {
        std::uint64_t sketch_bytes = 0;     // Count-Min counters, every key spec and lane
        std::uint64_t lifecycle_bytes = 0;  // seen and ended filters, recent-flow table
        std::uint64_t candidate_bytes = 0;  // heavy-hitter candidates of every key spec
        std::uint64_t distinct_bytes = 0;   // distinct sketches, their candidates and the totals' counters
        /// The rest of memory_bytes(), which no option sizes: the aggregation
        /// caches, the batch scratch and the objects themselves.
        std::uint64_t fixed_bytes = 0;
        std::uint64_t total() const noexcept {
            return sketch_bytes + lifecycle_bytes + candidate_bytes + distinct_bytes + fixed_bytes;
        }
    };
    /// Throws std::invalid_argument on bad parameters (as the constructor).
    static Footprint footprint(const MeasurementConfig& config);

private:
    const Aggregation& five_tuple() const noexcept { return aggregations_.front(); }
    void update_hashed(const PacketRecord* packets, const Hash128* hashes, std::size_t n,
                       const TunnelTag* tags) noexcept;
    void update_generation(const PacketRecord* packets, const Hash128* hashes, std::size_t n) noexcept;
    void update_extra_keys(const PacketRecord* packets, const Hash128* hashes, std::size_t n,
                           const TunnelTag* tags) noexcept;
    static std::vector<AggregationConfig> aggregation_configs(const MeasurementConfig& config);
    FlowCounts flow_counts(Window window) const;
    DistinctTotalsSketch distinct_totals(Window window) const;

    MeasurementConfig config_;
    std::vector<Aggregation> aggregations_;  // [0] the 5-tuple
    std::unique_ptr<FlowLifecycle> lifecycle_;
    // add_batch's scratch: one chunk's hashes (its own, or the extra keys'),
    // and which of its packets the lifecycle observes.
    PreparedBatch chunk_;
    std::vector<FlowKey> masked_;  // one chunk's keys under an extra key spec, and their hashes
    std::vector<Hash128> masked_hashes_;
    std::vector<std::uint32_t> observed_;
    bool vector_hash_ = false;  // keys hashed eight at a time (simd::level() avx512 at construction)
    bool keys_vlan_ = false;
    std::vector<PacketRecord> without_vlan_;  // one chunk's packets with VLAN id 0 (keys_vlan_ only)
    bool keys_tunnel_ = false;
    std::vector<std::uint32_t> tunnelled_;  // a chunk's packets keyed through a tunnel (`tunnel` spec only)
    // Distinct flows, sources and destinations (when a spec counts distinct
    // items): the open interval's, and the closed intervals' merged.
    std::unique_ptr<DistinctTotalsSketch> interval_totals_;
    std::unique_ptr<DistinctTotalsSketch> closed_totals_;
    FlowCounts closed_intervals_flows_;  // run sums over closed intervals
    double closed_expired_variance_ = 0;
};

}  // namespace flowsketch::core
