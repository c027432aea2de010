// The per-packet measurement: Count-Min sketches of packets and bytes for the
// current interval and for the whole run, and heavy-hitter candidates for each.
// The key is hashed once; every structure derives its indices from that hash.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/measure/aggregation_cache.hpp"
#include "core/sketch/count_min.hpp"
#include "core/lifecycle/flow_lifecycle.hpp"
#include "core/key/flow_key.hpp"
#include "core/sketch/heavy_hitters.hpp"
#include "core/measure/packet_record.hpp"

namespace flowsketch::core {

struct MeasurementConfig {
    CountMinParams sketch;          // lanes are set by the measurement
    std::uint32_t top_k = 10;       // heavy hitters reported
    std::uint32_t candidates = 0;   // candidate-set size; 0 = max(4·top_k, 64)
    std::uint64_t hash_seed = 0x666c6f77736b7463ULL;  // "flowsktc"
    bool track_flows = true;                 // the flow lifecycle (new/active/expired/ended)
    /// Flows whose packets are summed before they reach the sketches (see
    /// AggregationCache; a power of two, 0 = off). 8192 × 64 B stays in L2.
    std::uint32_t aggregation_slots = 8192;
    FlowLifecycleConfig lifecycle;
};

/// Flow lifecycle answers over a window, with their bounds (see FlowCounts).
/// For the whole run, counts are summed over intervals and active is as of now.
struct FlowSummary {
    std::uint64_t new_flows = 0;
    double new_undercount_bound = 0;  // truth − new ≤ this (≈ 0.999 per interval)
    double active = 0;
    double active_stderr = 0;
    double active_lower = 0;
    double active_upper = 0;
    double expired = 0;
    double expired_stderr = 0;
    std::uint64_t ended = 0;
    double ended_undercount_bound = 0;
    double fpr = 0;       // seen filter's false-positive rate now
    double max_fpr = 0;   // highest over the window
    double target_fpr = 0;
    bool overfilled = false;
};

struct HeavyHitter {
    FlowKey key;
    std::uint64_t estimate = 0;  // never below the truth
    std::uint64_t lower = 0;     // truth ≥ lower with probability ≥ 1 − δ
    /// Another candidate maps to exactly the same cell in every row, so the
    /// sketch cannot tell their counts apart: the estimate bounds their sum and
    /// `lower` is 0. (The per-query δ does not cover selection: among millions
    /// of flows, a few share every cell with a heavy one — probability 1/w² per
    /// pair in the Kirsch–Mitzenmacher scheme — and would otherwise be reported
    /// as heavy with a false lower bound.)
    bool shares_cells = false;
};

/// What one window (an interval or the whole run) measured.
struct WindowSummary {
    std::uint64_t packets = 0;
    std::uint64_t bytes = 0;
    std::vector<HeavyHitter> top_packets;  // largest first
    std::vector<HeavyHitter> top_bytes;
    bool has_flows = false;  // the lifecycle is tracked
    FlowSummary flows;
};

class FlowMeasurement {
public:
    /// add_batch measures its packets this many at a time, with scratch of
    /// about 100 KiB read in order: the batch size callers should hand it.
    /// Each chunk starts its three prefetch pipelines (cache lines, filter
    /// blocks, sketch cells) cold: its first packets wait on memory. 1,024
    /// packets instead of 64 made b 2.3-4% faster and a 2-4% (256: about
    /// half of that; 2,048 no better), more so while the host's memory is slow.
    static constexpr std::size_t chunk_packets = 1024;

    /// Throws std::invalid_argument on bad sketch parameters or top_k == 0.
    explicit FlowMeasurement(const MeasurementConfig& config);

    void add(const PacketRecord& packet) noexcept;
    void add_batch(std::span<const PacketRecord> packets) noexcept;

    /// A batch's flow hashes, from which every structure locates its cells:
    /// the pure, per-key half of add_batch, which another thread can compute
    /// (prepare) while this one updates (add_prepared).
    struct PreparedBatch {
        std::vector<Hash128> hashes;
    };
    void prepare(std::span<const PacketRecord> packets, PreparedBatch& out) const;
    /// add_batch() of packets that prepare() hashed (same result).
    void add_prepared(std::span<const PacketRecord> packets, const PreparedBatch& prepared) noexcept;

    /// Moves the counts still summed in the aggregation cache into the
    /// sketches and offers their flows to the heavy-hitter candidates. The
    /// summaries and start_new_interval() do it first themselves.
    void flush_pending() noexcept;

    /// The current interval, and the run so far (all intervals, including the
    /// current one). Not const: pending counts are flushed first.
    WindowSummary interval_summary();
    WindowSummary total_summary();

    /// Lets time pass without packets (expiries up to `timestamp_ns` count).
    void advance_to(std::int64_t timestamp_ns) noexcept;

    /// Closes the current interval: its counters stay in the run totals.
    void start_new_interval() noexcept;

    /// The lifecycle (null when not tracked).
    const FlowLifecycle* lifecycle() const noexcept { return lifecycle_.get(); }

    const CountMinParams& sketch_params() const noexcept { return sketch_.params(); }
    /// The sketch (packets and bytes of this interval and of the run, one lane
    /// each; see Lane). Call flush_pending() first for a complete picture.
    const CountMinSketch& sketch() const noexcept { return sketch_; }
    const MeasurementConfig& config() const noexcept { return config_; }
    std::size_t memory_bytes() const noexcept;

    /// The state whose size the parameters choose, before anything is
    /// allocated: a command line can refuse a size asked for by mistake (a
    /// tiny δ, a huge max-flows) instead of running out of memory.
    struct Footprint {
        std::uint64_t sketch_bytes = 0;     // Count-Min counters, every lane
        std::uint64_t lifecycle_bytes = 0;  // seen and ended filters, recent-flow table
        std::uint64_t candidate_bytes = 0;  // the four heavy-hitter candidate sets
        /// The rest of memory_bytes(), which no option sizes: the aggregation
        /// cache, the batch scratch and the object itself.
        std::uint64_t fixed_bytes = 0;
        std::uint64_t total() const noexcept {
            return sketch_bytes + lifecycle_bytes + candidate_bytes + fixed_bytes;
        }
    };
    /// Throws std::invalid_argument on bad parameters (as the constructor).
    static Footprint footprint(const MeasurementConfig& config);

    /// Lanes of every sketch cell: this interval's and the run's packets and bytes.
    enum Lane : std::uint32_t { interval_packets, interval_bytes, total_packets, total_bytes, lanes };

private:
    void update_hashed(const PacketRecord* packets, const Hash128* hashes, std::size_t n) noexcept;
    void update_generation(const PacketRecord* packets, const Hash128* hashes, std::size_t n) noexcept;
    void flush_entries(std::size_t n) noexcept;
    void locate_entries(std::size_t n) noexcept;
    void sketch_entry(std::size_t i, std::size_t n) noexcept;
    WindowSummary summarize(Lane packets_lane, Lane bytes_lane, const HeavyHitterCandidates& by_packets,
                            const HeavyHitterCandidates& by_bytes) const;
    std::vector<HeavyHitter> rank(const HeavyHitterCandidates& candidates, Lane lane) const;

    MeasurementConfig config_;
    CountMinSketch sketch_;
    AggregationCache cache_;
    HeavyHitterCandidates interval_by_packets_;
    HeavyHitterCandidates interval_by_bytes_;
    HeavyHitterCandidates total_by_packets_;
    HeavyHitterCandidates total_by_bytes_;
    std::unique_ptr<FlowLifecycle> lifecycle_;
    // add_batch's scratch: one chunk of packets (chunk_packets), located;
    // the entries its packets displaced from the cache, and their sketch
    // columns; which of its packets the lifecycle observes.
    // Entries whose sketch cells are being loaded ahead of the update: 8
    // (56 lines); 4 left the first misses of a flood exposed (b2m 1.5-8%
    // slower at the quartile over five interleaved runs; 12 and 16 no better).
    static constexpr std::size_t sketch_lookahead = 8;
    /// The bytes of that scratch, for footprint().
    static std::size_t scratch_bytes(std::uint32_t depth) noexcept;
    PreparedBatch chunk_;
    std::vector<AggregationCache::Entry> evicted_;
    std::vector<std::uint32_t> evicted_columns_;
    std::vector<std::uint32_t> observed_;
    bool vector_hash_ = false;  // keys hashed eight at a time (simd::level() avx512 at construction)
    FlowSummary closed_intervals_flows_;  // run sums over closed intervals
    double closed_expired_variance_ = 0;
};

}  // namespace flowsketch::core
