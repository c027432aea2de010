#include "core/measure/top_list.hpp"

#include <algorithm>
#include <utility>

#include "core/key/hash.hpp"

namespace flowsketch::core {

TopList rank_keys(const CountMinSketch& sketch, std::uint32_t lane, std::span<const FlowKey> keys,
                  const KeySpec& spec, Weight weight, std::uint32_t top_k, std::uint64_t hash_seed,
                  std::span<const CandidateCount> counts) {
    TopList list;
    list.spec = spec;
    list.weight = weight;
    list.total = sketch.total(lane);
    std::vector<HeavyHitter>& ranked = list.rows;
    const std::uint32_t depth = sketch.params().depth;
    const bool counted = !counts.empty();
    // Columns per candidate, row-major within a candidate; equal signatures share every counter.
    std::vector<std::uint32_t> columns(keys.size() * depth);
    std::vector<std::pair<std::vector<std::uint32_t>, std::size_t>> signatures;
    std::vector<std::uint64_t> exact(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const Hash128 hash = hash_key(keys[i], hash_seed);
        std::uint64_t estimate = sketch.estimate(hash, lane);
        for (std::uint32_t row = 0; row < depth; ++row) columns[i * depth + row] = sketch.column(hash, row);
        signatures.emplace_back(std::vector<std::uint32_t>(columns.begin() + static_cast<std::ptrdiff_t>(i * depth),
                                                           columns.begin() + static_cast<std::ptrdiff_t>((i + 1) * depth)),
                                i);
        if (counted) estimate = std::min(estimate, counts[i].upper);
        ranked.push_back(HeavyHitter{keys[i], estimate, 0, false});
        exact[i] = counted ? counts[i].exact : 0;
    }
    if (counted && !sketch.params().conservative_update) {
        // A cell holds at least the exact counts of every candidate in it: what
        // the others counted is not this key's. This is what keeps a key that
        // shares its cells with heavy candidates (a flood's one-packet flow in
        // a heavy flow's cells) from taking the heavy count as its own.
        const std::uint32_t width = sketch.params().width;
        const std::uint32_t lanes = sketch.params().lanes;
        const std::span<const std::uint64_t> cells = sketch.counters();
        std::vector<std::pair<std::uint32_t, std::size_t>> by_column(keys.size());
        for (std::uint32_t row = 0; row < depth; ++row) {
            for (std::size_t i = 0; i < keys.size(); ++i) by_column[i] = {columns[i * depth + row], i};
            std::sort(by_column.begin(), by_column.end());
            for (std::size_t begin = 0; begin < by_column.size();) {
                std::size_t end = begin;
                std::uint64_t exact_in_cell = 0;
                for (; end < by_column.size() && by_column[end].first == by_column[begin].first; ++end) {
                    exact_in_cell += exact[by_column[end].second];
                }
                const std::uint64_t cell = cells[(std::size_t{row} * width + by_column[begin].first) * lanes + lane];
                for (std::size_t j = begin; j < end; ++j) {
                    const std::size_t i = by_column[j].second;
                    const std::uint64_t others = exact_in_cell - exact[i];
                    ranked[i].estimate = std::min(ranked[i].estimate, cell - std::min(others, cell));
                }
                begin = end;
            }
        }
    }
    // The lower bound is taken from the corrected estimate: lower, and as
    // sure (the truth is at least the estimate less ε·N whenever the
    // Count-Min estimate is, since the corrected one is never above it).
    for (std::size_t i = 0; i < ranked.size(); ++i) {
        ranked[i].lower = std::max(sketch.lower_bound(ranked[i].estimate, lane), exact[i]);
    }
    std::sort(signatures.begin(), signatures.end());
    for (std::size_t i = 0; i + 1 < signatures.size(); ++i) {
        if (signatures[i].first != signatures[i + 1].first) continue;
        for (const std::size_t at : {signatures[i].second, signatures[i + 1].second}) {
            ranked[at].shares_cells = true;
            ranked[at].lower = exact[at];
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
