#include "core/measure/aggregation.hpp"

#include <stdexcept>
#include <utility>

namespace flowsketch::core {
namespace {

CountMinParams with_window_lanes(CountMinParams params) {
    params.lanes = window_lanes;
    return params;
}

CountMinParams with_lanes(CountMinParams params, std::uint32_t lanes) {
    params.lanes = lanes;
    return params;
}

// One window's lanes, packets and bytes: what a window part and the previous interval hold.
constexpr auto part_lanes = static_cast<std::uint32_t>(all_weights.size());

}  // namespace

Aggregation::Aggregation(const AggregationConfig& config)
    : config_(config),
      sketch_(with_window_lanes(config.sketch)),
      cache_(config.cache_slots),
      candidates_{HeavyHitterCandidates(config.candidates), HeavyHitterCandidates(config.candidates),
                  HeavyHitterCandidates(config.candidates), HeavyHitterCandidates(config.candidates)},
      previous_(with_lanes(sketch_.params(), part_lanes)) {
    config_.sketch = sketch_.params();
    for (auto& keys : previous_keys_) keys.reserve(config.candidates);
    if (config.spec.counts_distinct()) {
        distinct_ = std::make_unique<DistinctCounts>(config.spec, config.distinct, config.candidates, config.hash_seed);
    }
    // A batch displaces at most one entry per packet: no allocation after this.
    displaced_.resize(max_displaced);
    columns_.resize(max_displaced * sketch_.params().depth);
}

// Locates the sketch columns of the first n displaced entries and starts
// loading the cells of the first few.
void Aggregation::locate_displaced(std::size_t n) noexcept {
    std::uint32_t* columns = columns_.data();
    sketch_.columns_of(reinterpret_cast<const std::byte*>(displaced_.data()) + offsetof(AggregationCache::Entry, hash),
                       sizeof(AggregationCache::Entry), n, columns);
    const std::uint32_t depth = sketch_.params().depth;
    for (std::size_t i = 0; i < std::min(sketch_lookahead, n); ++i) sketch_.prefetch_at(columns + i * depth);
}

void Aggregation::sketch_displaced(std::size_t i, std::size_t n) noexcept {
    const std::uint32_t depth = sketch_.params().depth;
    const std::uint32_t* columns = columns_.data();
    if (i + sketch_lookahead < n) sketch_.prefetch_at(columns + (i + sketch_lookahead) * depth);
    const AggregationCache::Entry& e = displaced_[i];
    const std::array<std::uint64_t, window_lanes> weights = {e.packets, e.bytes, e.packets, e.bytes};
    std::array<std::uint64_t, window_lanes> estimates;
    sketch_.update_and_estimate_at(columns + i * depth, weights, estimates);
    for (std::uint32_t lane = 0; lane < window_lanes; ++lane) {
        candidates_[lane].offer(e.key, e.hash, estimates[lane], weights[lane]);
    }
}

void Aggregation::flush_displaced(std::size_t n) noexcept {
    locate_displaced(n);
    for (std::size_t i = 0; i < n; ++i) sketch_displaced(i, n);
}

void Aggregation::flush_pending() noexcept {
    std::size_t n = 0;
    cache_.drain([&](const AggregationCache::Entry& entry) {
        displaced_[n++] = entry;
        if (n == max_displaced) {
            flush_displaced(n);
            n = 0;
        }
    });
    flush_displaced(n);
}

std::vector<FlowKey> Aggregation::candidate_keys(Window window, Weight weight) const {
    std::vector<FlowKey> keys;
    for (const auto& entry : candidates_[lane_of(window, weight)].entries()) keys.push_back(entry.key);
    return keys;
}

// In the order of candidate_keys().
std::vector<CandidateCount> Aggregation::candidate_counts(Window window, Weight weight) const {
    std::vector<CandidateCount> counts;
    for (const auto& entry : candidates_[lane_of(window, weight)].entries()) {
        counts.push_back(CandidateCount{entry.exact, entry.upper});
    }
    return counts;
}

TopList Aggregation::top(Window window, Weight weight, std::uint32_t top_k) const {
    // Re-estimated: a candidate's stored estimate may be stale (it refreshes
    // only when the key beats the smallest candidate).
    return rank_keys(sketch_, lane_of(window, weight), candidate_keys(window, weight), config_.spec, weight, top_k,
                     config_.hash_seed, candidate_counts(window, weight));
}

KeyWindow Aggregation::window_part(Window window) const {
    return window_part_holding(window, sketch_.lanes_of(lane_of(window, Weight::packets), part_lanes));
}

KeyWindow Aggregation::window_part(Window window, CountMinSketch&& storage) const {
    return window_part_holding(
        window, sketch_.lanes_of(lane_of(window, Weight::packets), part_lanes, std::move(storage)));
}

CountMinParams Aggregation::window_part_params() const noexcept { return with_lanes(sketch_.params(), part_lanes); }

KeyWindow Aggregation::window_part_holding(Window window, CountMinSketch&& lanes) const {
    return KeyWindow{config_.spec,
                     std::move(lanes),
                     {candidate_keys(window, Weight::packets), candidate_keys(window, Weight::bytes)},
                     {},
                     {},
                     {candidate_counts(window, Weight::packets), candidate_counts(window, Weight::bytes)}};
}

ChangeList Aggregation::changes(Weight weight, std::uint32_t top_k) const {
    const std::uint32_t lane = lane_of(Window::interval, weight);
    const auto previous_lane = static_cast<std::uint32_t>(weight);
    ChangeList list{config_.spec, weight, 0, sketch_.total(lane), 0, has_previous_, {}};
    if (!has_previous_) return list;
    list.previous_total = previous_.total(previous_lane);
    list.bound = sketch_.params().epsilon() * static_cast<double>(std::max(list.previous_total, list.current_total));
    std::vector<FlowKey> keys = candidate_keys(Window::interval, weight);
    keys.insert(keys.end(), previous_keys_[previous_lane].begin(), previous_keys_[previous_lane].end());
    std::sort(keys.begin(), keys.end(), [](const FlowKey& a, const FlowKey& b) { return compare_keys(a, b) < 0; });
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    for (const FlowKey& key : keys) {
        const Hash128 hash = hash_key(key, config_.hash_seed);
        const std::uint64_t current = sketch_.estimate(hash, lane);
        const std::uint64_t previous = previous_.estimate(hash, previous_lane);
        if (current == previous) continue;
        list.rows.push_back(KeyChange{key, previous, current,
                                      static_cast<std::int64_t>(current) - static_cast<std::int64_t>(previous)});
    }
    const auto magnitude = [](const KeyChange& c) { return c.change < 0 ? -c.change : c.change; };
    std::sort(list.rows.begin(), list.rows.end(), [&](const KeyChange& a, const KeyChange& b) {
        if (magnitude(a) != magnitude(b)) return magnitude(a) > magnitude(b);
        return compare_keys(a.key, b.key) < 0;
    });
    if (list.rows.size() > top_k) list.rows.resize(top_k);
    return list;
}

void Aggregation::clear_interval() noexcept {
    static_assert(lane_of(Window::interval, Weight::bytes) == lane_of(Window::interval, Weight::packets) + 1);
    sketch_.copy_lanes_to(lane_of(Window::interval, Weight::packets), 2, previous_);
    for (const Weight weight : all_weights) {
        std::vector<FlowKey>& keys = previous_keys_[static_cast<std::size_t>(weight)];
        keys.clear();
        for (const auto& entry : candidates_[lane_of(Window::interval, weight)].entries()) keys.push_back(entry.key);
    }
    has_previous_ = true;
    sketch_.clear_lanes(lane_of(Window::interval, Weight::packets), 2);
    if (distinct_) distinct_->close_interval();
    for (const Weight weight : all_weights) candidates_[lane_of(Window::interval, weight)].clear();
}

std::size_t Aggregation::memory_bytes() const noexcept {
    std::size_t bytes = sketch_.memory_bytes() + previous_.memory_bytes() + cache_.memory_bytes() +
                        displaced_.capacity() * sizeof(AggregationCache::Entry) +
                        columns_.capacity() * sizeof(std::uint32_t);
    for (const auto& candidates : candidates_) bytes += candidates.memory_bytes();
    for (const auto& keys : previous_keys_) bytes += keys.capacity() * sizeof(FlowKey);
    if (distinct_) bytes += distinct_->memory_bytes();
    return bytes;
}

Aggregation::Footprint Aggregation::footprint(const AggregationConfig& config) {
    Footprint f;
    const CountMinParams sketch = with_window_lanes(config.sketch);
    // This interval's and the run's lanes, and the previous interval's.
    f.sketch_bytes = sketch.counter_bytes() + with_lanes(config.sketch, part_lanes).counter_bytes();
    f.candidate_bytes = window_lanes * std::uint64_t{HeavyHitterCandidates::planned_bytes(config.candidates)} +
                        2 * std::uint64_t{config.candidates} * sizeof(FlowKey);
    f.cache_bytes = std::uint64_t{config.cache_slots} * sizeof(AggregationCache::Entry) +
                    max_displaced * (sizeof(AggregationCache::Entry) + sketch.depth * sizeof(std::uint32_t));
    if (config.spec.counts_distinct()) f.distinct_bytes = DistinctCounts::planned_bytes(config.distinct, config.candidates);
    return f;
}

}  // namespace flowsketch::core
