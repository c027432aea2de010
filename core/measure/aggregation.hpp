// One aggregation: what a measurement keeps for one key spec. Its packets are
// summed per key in the aggregation cache; the entries the cache displaces go
// into a Count-Min sketch (one lane per window and weight) and are offered to
// the heavy-hitter candidates of each window and weight.
//
// The measurement interleaves these steps with the flow lifecycle's
// observations packet by packet, so that the two sequences' cache misses
// overlap; the per-packet add() is inline, the per-entry sketch update is not
// (inlined into that loop, it costs it registers).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/key/key_spec.hpp"
#include "core/measure/aggregation_cache.hpp"
#include "core/measure/distinct_counts.hpp"
#include "core/measure/top_list.hpp"
#include "core/measure/window_value.hpp"
#include "core/measure/window.hpp"
#include "core/sketch/count_min.hpp"
#include "core/sketch/heavy_hitters.hpp"

namespace flowsketch::core {

struct AggregationConfig {
    KeySpec spec = KeySpec::five_tuple();
    CountMinParams sketch;         // lanes are set by the aggregation (window_lanes)
    std::uint32_t candidates = 64;  // per window and weight
    std::uint32_t cache_slots = 8192;  // 0 or a power of two (see AggregationCache)
    std::uint64_t hash_seed = 0;
    DistinctSketchParams distinct;  // used when the spec counts distinct items
};

class Aggregation {
public:
    /// Most entries one batch may displace (the measurement's chunk size).
    static constexpr std::size_t max_displaced = 1024;

    /// Throws std::invalid_argument on bad sketch, candidate or cache parameters.
    explicit Aggregation(const AggregationConfig& config);

    const KeySpec& spec() const noexcept { return config_.spec; }
    const CountMinSketch& sketch() const noexcept { return sketch_; }
    /// The spec's distinct counts (null unless it counts distinct items).
    DistinctCounts* distinct() noexcept { return distinct_.get(); }
    const DistinctCounts* distinct() const noexcept { return distinct_.get(); }

    void prefetch(const Hash128& hash) const noexcept { cache_.prefetch(hash); }

    /// Sums one packet of `key` (already under this spec) into the cache.
    /// Returns false when it joined its key's pending entry, true when it
    /// started one. An entry it displaced is kept as the `displaced`-th of the
    /// batch's displaced entries, and `displaced` counts it (a caller's local:
    /// the loop keeps it in a register).
    bool add(const FlowKey& key, const Hash128& hash, std::uint32_t bytes, std::size_t& displaced) noexcept {
        const AggregationCache::Added added = cache_.add(key, hash, bytes, displaced_[displaced]);
        displaced += added == AggregationCache::Added::displaced ? 1 : 0;
        return added != AggregationCache::Added::summed;
    }

    /// The first n displaced entries go into the sketch in the order they
    /// were displaced: locate them first, then sketch each.
    void locate_displaced(std::size_t n) noexcept;
    /// Entry i of n located: into the sketch, its key offered to the
    /// candidates, with the cells of an entry a few places ahead on their way.
    void sketch_displaced(std::size_t i, std::size_t n) noexcept;
    /// locate and sketch each of the first n displaced entries.
    void flush_displaced(std::size_t n) noexcept;

    /// Moves every pending entry of the cache into the sketch and candidates.
    void flush_pending() noexcept;

    /// The window's heaviest keys by weight, at most top_k, re-estimated on
    /// the sketch. Call flush_pending() first.
    TopList top(Window window, Weight weight, std::uint32_t top_k) const;
    /// The window's sketch lanes and candidates as a value (call flush_pending() first).
    KeyWindow window_part(Window window) const;
    /// window_part() whose sketch lanes are copied into `storage` when it has
    /// their shape (see CountMinSketch::lanes_of).
    KeyWindow window_part(Window window, CountMinSketch&& storage) const;
    /// The parameters of window_part()'s sketch: its lanes are the window's two.
    CountMinParams window_part_params() const noexcept;
    std::uint64_t total(Window window, Weight weight) const noexcept {
        return sketch_.total(lane_of(window, weight));
    }

    /// The keys whose count changed most from the previous interval to this
    /// one, at most top_k, largest |change| first: the candidates of both
    /// intervals (a key whose count changed by c counted at least c in one of
    /// them) estimated on both intervals' sketches. Empty in the first interval.
    ChangeList changes(Weight weight, std::uint32_t top_k) const;

    /// Closes an interval: it becomes the previous interval (for changes());
    /// its lanes and candidates start again from zero.
    void clear_interval() noexcept;

    std::size_t memory_bytes() const noexcept;
    /// The part of memory_bytes() in sketches (this interval's and the run's
    /// lanes, and the previous interval's).
    std::size_t sketch_memory_bytes() const noexcept { return sketch_.memory_bytes() + previous_.memory_bytes(); }
    /// What an aggregation of this configuration allocates, before building it.
    struct Footprint {
        std::uint64_t sketch_bytes = 0;
        std::uint64_t candidate_bytes = 0;
        std::uint64_t cache_bytes = 0;    // the cache and the displaced entries' scratch
        std::uint64_t distinct_bytes = 0;  // the distinct counts' sketches and candidates
    };
    static Footprint footprint(const AggregationConfig& config);

private:
    // Entries whose sketch cells are loaded ahead of their update: enough to
    // cover a flood's first misses (every entry a miss) without flooding the
    // line-fill buffers.
    static constexpr std::size_t sketch_lookahead = 8;
    std::vector<FlowKey> candidate_keys(Window window, Weight weight) const;
    std::vector<CandidateCount> candidate_counts(Window window, Weight weight) const;
    KeyWindow window_part_holding(Window window, CountMinSketch&& lanes) const;  // the window's lanes

    AggregationConfig config_;
    CountMinSketch sketch_;
    AggregationCache cache_;
    std::array<HeavyHitterCandidates, window_lanes> candidates_;  // by lane_of(window, weight)
    std::vector<AggregationCache::Entry> displaced_;
    std::vector<std::uint32_t> columns_;  // the displaced entries' columns, depth per entry
    // The previous interval: its sketch lanes (packets, bytes) and candidates.
    CountMinSketch previous_;
    std::array<std::vector<FlowKey>, 2> previous_keys_;
    bool has_previous_ = false;
    std::unique_ptr<DistinctCounts> distinct_;
};

}  // namespace flowsketch::core
