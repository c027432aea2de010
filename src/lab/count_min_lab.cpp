// lab cms — standard versus Kirsch–Mitzenmacher Count-Min (seed 000, §9) on a
// Zipf stream.
//
// Stream: N = 200 000 updates over 20 000 keys, Zipf exponent 1.1 (weights 1).
// Target ε = 0.002 and δ ∈ {0.25, 0.05, 0.01}. For each δ three sketches see
// the same stream:
//  - standard: w = ⌈e/ε⌉, d = ⌈ln 1/δ⌉, bound e^{−d} (Cormode–Muthukrishnan);
//  - km-equal-memory: Kirsch–Mitzenmacher rows g_j = h1 + j·h2 mod w with w
//    the largest prime ≤ the standard width and the same depth — equal
//    memory; its bound at the same ε is 2/(εw²) + (2/(εw))^d (re-derived: the
//    seed prints it without ε), much weaker because 2/(εw) ≈ 2/e;
//  - km-for-error: CountMinParams::classic_for_error(ε, δ, KM): w = smallest prime
//    ≥ 2e/ε (about twice the memory), d smallest meeting δ.
// Observed: the share of distinct keys in the stream whose estimate exceeds
// the truth by more than ε·N, averaged over trials. Within: observed ≤ bound +
// 3 standard errors (the bound is an upper bound, not a prediction; on skewed
// streams the share is far below it).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/sketch/count_min.hpp"
#include "core/key/hash.hpp"
#include "core/sketch/random.hpp"
#include "src/lab/experiments.hpp"

namespace flowsketch::app::lab {
namespace {

constexpr std::uint64_t universe = 20000;
constexpr std::uint64_t stream_length = 200000;
constexpr double zipf_exponent = 1.1;
constexpr double epsilon = 0.002;

std::uint32_t prime_at_most(std::uint32_t n) {
    for (std::uint32_t c = n; c >= 2; --c) {
        if (core::next_prime(c) == c) return c;
    }
    return 2;
}

struct Variant {
    std::string name;
    core::CountMinParams params;
    double bound;
};

struct TrialResult {
    std::vector<double> failure_share;  // per variant
    std::vector<double> mean_error;     // per variant, in units of εN
};

}  // namespace

std::vector<Table> count_min_experiment(const LabOptions& options) {
    const std::uint64_t trials = options.trials != 0 ? options.trials : 100;
    std::vector<double> cdf(universe);
    double total = 0;
    for (std::uint64_t i = 0; i < universe; ++i) {
        total += std::pow(static_cast<double>(i + 1), -zipf_exponent);
        cdf[i] = total;
    }
    std::vector<Variant> variants;
    std::vector<double> deltas;
    for (const double delta : {0.25, 0.05, 0.01}) {
        const auto standard = core::CountMinParams::classic_for_error(
            epsilon, delta, core::CountMinVariant::standard);
        core::CountMinParams equal = standard;
        equal.variant = core::CountMinVariant::kirsch_mitzenmacher;
        equal.width = prime_at_most(standard.width);
        const auto km = core::CountMinParams::classic_for_error(
            epsilon, delta, core::CountMinVariant::kirsch_mitzenmacher);
        variants.push_back({"standard", standard, std::exp(-static_cast<double>(standard.depth))});
        variants.push_back({"km-equal-memory", equal,
                            core::kirsch_mitzenmacher_delta(epsilon, equal.width, equal.depth)});
        variants.push_back({"km-for-error", km,
                            core::kirsch_mitzenmacher_delta(epsilon, km.width, km.depth)});
        for (int i = 0; i < 3; ++i) deltas.push_back(delta);
    }

    const auto results = run_trials<TrialResult>(trials, options.threads, [&](std::uint64_t trial) {
        const std::uint64_t seed = trial_seed(options.seed, 300, trial);
        core::Xoshiro256 rng(seed);
        std::vector<std::uint64_t> truth(universe, 0);
        std::vector<core::Hash128> hashes(universe);
        for (std::uint64_t i = 0; i < universe; ++i) {
            const std::uint64_t words[2] = {seed, i};
            hashes[i] = core::hash128(words, sizeof words, 0);
        }
        std::vector<core::CountMinSketch> sketches;
        for (const Variant& v : variants) {
            core::CountMinParams p = v.params;
            p.seed = seed;
            sketches.emplace_back(p);
        }
        for (std::uint64_t t = 0; t < stream_length; ++t) {
            const double u = rng.uniform() * total;
            const auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
            const auto id = static_cast<std::size_t>(
                std::min<std::ptrdiff_t>(it - cdf.begin(), universe - 1));
            ++truth[id];
            for (auto& sketch : sketches) sketch.update(hashes[id], 1);
        }
        const double threshold = epsilon * static_cast<double>(stream_length);
        TrialResult out;
        for (const auto& sketch : sketches) {
            std::uint64_t failures = 0;
            std::uint64_t seen = 0;
            double error_sum = 0;
            for (std::uint64_t i = 0; i < universe; ++i) {
                if (truth[i] == 0) continue;
                ++seen;
                const double error = static_cast<double>(sketch.estimate(hashes[i]) - truth[i]);
                error_sum += error;
                failures += error > threshold ? 1u : 0u;
            }
            out.failure_share.push_back(static_cast<double>(failures) /
                                        static_cast<double>(seen));
            out.mean_error.push_back(error_sum / static_cast<double>(seen) / threshold);
        }
        return out;
    });

    Table table;
    table.title = fmt_title("lab cms — Count-Min on a Zipf(1.1) stream (N = 200000, 20000 keys, "
                            "eps = 0.002): share of keys with error > eps*N",
                            trials, options.seed);
    table.note =
        "  bound (JSON: expected): the failure bound for that width and depth at eps (standard e^-d; KM\n"
        "  2/(eps w^2) + (2/(eps w))^d); delta: the target; within: observed <= bound + 3 stderr.";
    table.text_hidden = {"experiment", "n", "c", "rounds", "trials"};
    table.expected_heading = "bound";
    for (std::size_t v = 0; v < variants.size(); ++v) {
        std::vector<double> shares;
        std::vector<double> errors;
        for (const TrialResult& r : results) {
            shares.push_back(r.failure_share[v]);
            errors.push_back(r.mean_error[v]);
        }
        const Summary share = summarize(shares);
        const Summary error = summarize(errors);
        const Variant& variant = variants[v];
        const std::uint64_t memory = std::uint64_t{variant.params.width} * variant.params.depth;
        Row row("cms", stream_length, memory, variant.params.depth, 1, 0, variant.name, trials,
                share.mean, variant.bound,
                share.mean <= variant.bound + critical_value(trials) * share.stderr_mean);
        row.add("width", static_cast<std::int64_t>(variant.params.width))
            .add("depth", static_cast<std::int64_t>(variant.params.depth))
            .add("delta", deltas[v])
            .add("stderr", share.stderr_mean)
            .add("mean_err_epsN", error.mean);
        table.rows.push_back(std::move(row));
    }
    return {table};
}

}  // namespace flowsketch::app::lab
