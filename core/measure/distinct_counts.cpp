#include "core/measure/distinct_counts.hpp"

#include <algorithm>
#include <stdexcept>

namespace flowsketch::core {

DistinctCounts::DistinctCounts(const KeySpec& spec, const DistinctSketchParams& params, std::uint32_t candidates,
                               std::uint64_t hash_seed)
    : spec_(spec),
      hash_seed_(hash_seed),
      interval_(params),
      closed_(params),
      run_(params),
      interval_candidates_(candidates),
      capacity_(candidates) {
    if (!spec.counts_distinct()) throw std::invalid_argument("distinct counts of a spec that counts none");
    run_keys_.reserve(2 * std::size_t{candidates});
}

const DistinctSketch& DistinctCounts::sketch(Window window) {
    if (window == Window::interval) return interval_;
    run_ = closed_;
    run_.merge(interval_);
    return run_;
}

std::vector<FlowKey> DistinctCounts::candidate_keys(Window window) const {
    std::vector<FlowKey> keys;
    for (const auto& entry : interval_candidates_.entries()) keys.push_back(entry.key);
    if (window == Window::run) keys.insert(keys.end(), run_keys_.begin(), run_keys_.end());
    std::sort(keys.begin(), keys.end(), [](const FlowKey& a, const FlowKey& b) { return compare_keys(a, b) < 0; });
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    return keys;
}

// The run keeps at most `capacity_` keys: those with the most distinct items
// on the merged sketch, so its memory stays fixed however many intervals close.
void DistinctCounts::close_interval() {
    closed_.merge(interval_);
    std::vector<FlowKey> keys = candidate_keys(Window::run);
    if (keys.size() > capacity_) {
        std::vector<std::pair<double, FlowKey>> ranked;
        ranked.reserve(keys.size());
        for (const FlowKey& key : keys) ranked.emplace_back(closed_.estimate(hash_key(key, hash_seed_)), key);
        std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
        keys.clear();
        for (std::size_t i = 0; i < capacity_; ++i) keys.push_back(ranked[i].second);
    }
    run_keys_.assign(keys.begin(), keys.end());
    interval_.clear();
    interval_candidates_.clear();
}

std::size_t DistinctCounts::memory_bytes() const noexcept {
    return sizeof(*this) + interval_.memory_bytes() + closed_.memory_bytes() + run_.memory_bytes() +
           interval_candidates_.memory_bytes() + run_keys_.capacity() * sizeof(FlowKey) -
           3 * sizeof(DistinctSketch) - sizeof(HeavyHitterCandidates);
}

std::uint64_t DistinctCounts::planned_bytes(const DistinctSketchParams& params, std::uint32_t candidates) noexcept {
    return 3 * params.planned_bytes() + HeavyHitterCandidates::planned_bytes(candidates) +
           2 * std::uint64_t{candidates} * sizeof(FlowKey) + sizeof(DistinctCounts);
}

}  // namespace flowsketch::core
