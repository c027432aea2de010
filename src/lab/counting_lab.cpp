// lab counting — the largest counter of a counting Bloom filter against the
// overflow bound of Broder–Mitzenmacher's survey (seed 004, §2.5):
//   P(max_i c(i) ≥ j) ≤ m·(e·ln 2 / j)^j    when k ≤ (ln 2)·m/n.
// n = 10 000 keys, m = 80 000 counters, k = 5 (≤ 8·ln 2 ≈ 5.55), counters 16
// bits wide so the maximum is seen unsaturated. Observed: the share of trials
// whose largest counter is ≥ j. Within: observed ≤ min(1, bound) + 3 binomial
// standard errors. The tighter union bound m·P(Binomial(nk, 1/m) ≥ j) is shown
// beside it. j = 15 is where a 4-bit counter saturates.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/sketch/counting_bloom_filter.hpp"
#include "core/key/hash.hpp"
#include "src/lab/experiments.hpp"

namespace flowsketch::app::lab {

std::vector<Table> counting_experiment(const LabOptions& options) {
    const std::uint64_t trials = options.trials != 0 ? options.trials : 5000;
    const std::uint64_t n = 10000;
    const std::uint64_t m = 80000;
    const std::uint32_t k = 5;
    const auto maxima = run_trials<std::uint32_t>(trials, options.threads, [&](std::uint64_t t) {
        const std::uint64_t seed = trial_seed(options.seed, 400, t);
        core::CountingBloomFilter filter(
            core::CountingBloomParams{m, k, 16, core::ProbeScheme::double_hashing, seed});
        for (std::uint64_t i = 0; i < n; ++i) {
            const std::uint64_t words[2] = {seed, i};
            filter.insert(core::hash128(words, sizeof words, 0));
        }
        return filter.max_counter();
    });
    Table table;
    table.title = fmt_title("lab counting — counting Bloom filter (n = 10000, m = 80000, k = 5): "
                            "P(max counter >= j) vs the overflow bound m(e ln2/j)^j",
                            trials, options.seed);
    table.note = "  observed: share of trials with max >= j; bound (JSON: expected): m(e ln2/j)^j, an upper "
                 "bound;\n  within: observed <= min(1, bound) + "
                 "3 stderr;\n  j = 15 is the saturation value of the default 4-bit counters.";
    table.text_hidden = {"experiment", "n", "m", "k", "c", "rounds", "scheme", "trials"};
    table.expected_heading = "bound";
    std::uint32_t largest = 0;
    for (const std::uint32_t v : maxima) largest = std::max(largest, v);
    const double td = static_cast<double>(trials);
    for (const std::uint32_t j : {4u, 5u, 6u, 7u, 8u, 9u, 10u, 12u, 15u}) {
        const auto hits = std::count_if(maxima.begin(), maxima.end(),
                                        [j](std::uint32_t v) { return v >= j; });
        const double observed = static_cast<double>(hits) / td;
        const double bound = core::counting_overflow_bound(static_cast<double>(m), j);
        const double capped = std::min(1.0, bound);
        const double se = std::sqrt(capped * (1 - capped) / td);
        Row row("counting", n, m, k, 1, 0, "double", trials, observed, bound,
                observed <= capped + 3 * se);
        row.add("j", static_cast<std::int64_t>(j))
            .add("binomial_bound", core::counting_overflow_binomial_bound(
                                       static_cast<double>(m), static_cast<double>(n), k, j))
            .add("largest_seen", static_cast<std::int64_t>(largest));
        table.rows.push_back(std::move(row));
    }
    return {table};
}

}  // namespace flowsketch::app::lab
