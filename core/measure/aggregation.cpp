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
void Aggregation::locate(std::size_t n) noexcept {
    std::uint32_t* columns = columns_.data();
    sketch_.columns_of(reinterpret_cast<const std::byte*>(displaced_.data()) + offsetof(AggregationCache::Entry, hash),
                       sizeof(AggregationCache::Entry), n, columns);
    const std::uint32_t depth = sketch_.params().depth;
    for (std::size_t i = 0; i < std::min(sketch_lookahead, n); ++i) sketch_.prefetch_at(columns + i * depth);
}

void Aggregation::flush_displaced() noexcept {
    locate_displaced();
    for (std::size_t i = 0; i < displaced_count_; ++i) sketch_displaced(i);
    clear_displaced();
}

void Aggregation::flush_pending() noexcept {
    flush_displaced();
    cache_.drain([&](const AggregationCache::Entry& entry) {
        displaced_[displaced_count_++] = entry;
        if (displaced_count_ == max_displaced) flush_displaced();
    });
    flush_displaced();
}

TopList Aggregation::top(Window window, Weight weight, std::uint32_t top_k) const {
    const std::uint32_t lane = lane_of(window, weight);
    TopList list{config_.spec, weight, sketch_.total(lane), {}};
    std::vector<HeavyHitter>& ranked = list.rows;
    // Column signature per candidate: equal signatures share every counter.
    std::vector<std::pair<std::vector<std::uint32_t>, std::size_t>> signatures;
    for (const auto& entry : candidates_[lane].entries()) {
        // Re-query: a candidate's stored estimate may be stale (it only
        // refreshes when the key beats the smallest candidate).
        const Hash128 hash = hash_key(entry.key, config_.hash_seed);
        const std::uint64_t estimate = sketch_.estimate(hash, lane);
        std::vector<std::uint32_t> columns(sketch_.params().depth);
        for (std::uint32_t row = 0; row < columns.size(); ++row) columns[row] = sketch_.column(hash, row);
        signatures.emplace_back(std::move(columns), ranked.size());
        ranked.push_back(HeavyHitter{entry.key, estimate, sketch_.lower_bound(estimate, lane)});
    }
    std::sort(signatures.begin(), signatures.end());
    for (std::size_t i = 0; i + 1 < signatures.size(); ++i) {
        if (signatures[i].first != signatures[i + 1].first) continue;
        for (const std::size_t at : {signatures[i].second, signatures[i + 1].second}) {
            ranked[at].shares_cells = true;
            ranked[at].lower = 0;
        }
    }
    std::sort(ranked.begin(), ranked.end(), [](const HeavyHitter& a, const HeavyHitter& b) {
        if (a.estimate != b.estimate) return a.estimate > b.estimate;
        return compare_keys(a.key, b.key) < 0;  // deterministic order on ties
    });
    if (ranked.size() > top_k) ranked.resize(top_k);
    return list;
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
