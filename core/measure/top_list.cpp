#include "core/measure/top_list.hpp"

#include <algorithm>
#include <utility>

#include "core/key/hash.hpp"

namespace flowsketch::core {

TopList rank_keys(const CountMinSketch& sketch, std::uint32_t lane, std::span<const FlowKey> keys,
                  const KeySpec& spec, Weight weight, std::uint32_t top_k, std::uint64_t hash_seed) {
    TopList list{spec, weight, sketch.total(lane), {}};
    std::vector<HeavyHitter>& ranked = list.rows;
    // Column signature per candidate: equal signatures share every counter.
    std::vector<std::pair<std::vector<std::uint32_t>, std::size_t>> signatures;
    for (const FlowKey& key : keys) {
        const Hash128 hash = hash_key(key, hash_seed);
        const std::uint64_t estimate = sketch.estimate(hash, lane);
        std::vector<std::uint32_t> columns(sketch.params().depth);
        for (std::uint32_t row = 0; row < columns.size(); ++row) columns[row] = sketch.column(hash, row);
        signatures.emplace_back(std::move(columns), ranked.size());
        ranked.push_back(HeavyHitter{key, estimate, sketch.lower_bound(estimate, lane)});
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

}  // namespace flowsketch::core
