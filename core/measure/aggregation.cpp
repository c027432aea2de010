#include "core/measure/aggregation.hpp"

#include <stdexcept>
#include <utility>

namespace flowsketch::core {
namespace {

CountMinParams with_window_lanes(CountMinParams params) {
    params.lanes = window_lanes;
    return params;
}

}  // namespace

Aggregation::Aggregation(const AggregationConfig& config)
    : config_(config),
      sketch_(with_window_lanes(config.sketch)),
      cache_(config.cache_slots),
      candidates_{HeavyHitterCandidates(config.candidates), HeavyHitterCandidates(config.candidates),
                  HeavyHitterCandidates(config.candidates), HeavyHitterCandidates(config.candidates)} {
    config_.sketch = sketch_.params();
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
        candidates_[lane].offer(e.key, e.hash, estimates[lane]);
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

TopList Aggregation::top(Window window, Weight weight, std::uint32_t top_k) const {
    // Re-estimated: a candidate's stored estimate may be stale (it refreshes
    // only when the key beats the smallest candidate).
    return rank_keys(sketch_, lane_of(window, weight), candidate_keys(window, weight), config_.spec, weight, top_k,
                     config_.hash_seed);
}

KeyWindow Aggregation::window_part(Window window) const {
    return KeyWindow{config_.spec, sketch_.lanes_of(lane_of(window, Weight::packets), 2),
                     {candidate_keys(window, Weight::packets), candidate_keys(window, Weight::bytes)}};
}

void Aggregation::clear_interval() noexcept {
    static_assert(lane_of(Window::interval, Weight::bytes) == lane_of(Window::interval, Weight::packets) + 1);
    sketch_.clear_lanes(lane_of(Window::interval, Weight::packets), 2);
    for (const Weight weight : all_weights) candidates_[lane_of(Window::interval, weight)].clear();
}

std::size_t Aggregation::memory_bytes() const noexcept {
    std::size_t bytes = sketch_.memory_bytes() + cache_.memory_bytes() +
                        displaced_.capacity() * sizeof(AggregationCache::Entry) +
                        columns_.capacity() * sizeof(std::uint32_t);
    for (const auto& candidates : candidates_) bytes += candidates.memory_bytes();
    return bytes;
}

Aggregation::Footprint Aggregation::footprint(const AggregationConfig& config) {
    Footprint f;
    const CountMinParams sketch = with_window_lanes(config.sketch);
    f.sketch_bytes = sketch.counter_bytes();
    f.candidate_bytes = window_lanes * std::uint64_t{HeavyHitterCandidates::planned_bytes(config.candidates)};
    f.cache_bytes = std::uint64_t{config.cache_slots} * sizeof(AggregationCache::Entry) +
                    max_displaced * (sizeof(AggregationCache::Entry) + sketch.depth * sizeof(std::uint32_t));
    return f;
}

}  // namespace flowsketch::core
