#include "core/measure/top_list.hpp"

#include <algorithm>
#include <utility>

#include "core/key/hash.hpp"

namespace flowsketch::core {

TopList rank_keys(const CountMinSketch& sketch, std::uint32_t lane, std::span<const FlowKey> keys,
                  const KeySpec& spec, Weight weight, std::uint32_t top_k, std::uint64_t hash_seed) {
    TopList list;
    list.spec = spec;
    list.weight = weight;
    list.total = sketch.total(lane);
    std::vector<HeavyHitter>& ranked = list.rows;
    // Column signature per candidate: equal signatures share every counter.
    std::vector<std::pair<std::vector<std::uint32_t>, std::size_t>> signatures;
    for (const FlowKey& key : keys) {
        const Hash128 hash = hash_key(key, hash_seed);
        const std::uint64_t estimate = sketch.estimate(hash, lane);
        std::vector<std::uint32_t> columns(sketch.params().depth);
        for (std::uint32_t row = 0; row < columns.size(); ++row) columns[row] = sketch.column(hash, row);
        signatures.emplace_back(std::move(columns), ranked.size());
        ranked.push_back(HeavyHitter{key, estimate, sketch.lower_bound(estimate, lane), false});
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

std::vector<DistinctBounds> distinct_counts(const TopList& list, const DistinctSketch& distinct,
                                            const CountMinSketch& sketch, std::uint32_t lane, std::uint64_t hash_seed) {
    std::vector<DistinctBounds> counts;
    for (const HeavyHitter& row : list) {
        const Hash128 hash = hash_key(row.key, hash_seed);
        DistinctBounds bounds = distinct.bounds(hash);
        const auto packets = static_cast<double>(sketch.estimate(hash, lane));
        bounds.estimate = std::min(bounds.estimate, packets);
        bounds.upper = std::min(bounds.upper, packets);
        bounds.lower = std::min(bounds.lower, bounds.estimate);
        counts.push_back(bounds);
    }
    return counts;
}

DistinctTopList rank_by_distinct(const CountMinSketch& sketch, std::uint32_t lane, std::span<const FlowKey> keys,
                                 const DistinctSketch& distinct, const KeySpec& spec, std::uint32_t top_k,
                                 std::uint64_t hash_seed) {
    TopList all = rank_keys(sketch, lane, keys, spec, Weight::packets, static_cast<std::uint32_t>(keys.size()),
                            hash_seed);
    const std::vector<DistinctBounds> counts = distinct_counts(all, distinct, sketch, lane, hash_seed);
    std::vector<std::size_t> order(all.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        if (counts[a].estimate != counts[b].estimate) return counts[a].estimate > counts[b].estimate;
        return compare_keys(all.rows[a].key, all.rows[b].key) < 0;
    });
    if (order.size() > top_k) order.resize(top_k);
    DistinctTopList ranked;
    ranked.list.spec = all.spec;
    ranked.list.weight = all.weight;
    ranked.list.total = all.total;
    for (const std::size_t i : order) {
        ranked.list.rows.push_back(all.rows[i]);
        ranked.distinct.push_back(counts[i]);
    }
    return ranked;
}

}  // namespace flowsketch::core
