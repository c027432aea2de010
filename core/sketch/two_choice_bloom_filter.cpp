#include "core/sketch/two_choice_bloom_filter.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/sketch/counting_bloom_filter.hpp"

namespace flowsketch::core {
namespace {

constexpr std::uint64_t max_bits = std::uint64_t{1} << 40;
constexpr std::uint64_t group_salt = 0x74776f2d63686f69ULL;  // "two-choi"
constexpr std::uint64_t tie_salt = 0x7469652d62726b72ULL;    // "tie-brkr"

// E[min of c iid Binomial(k, q)] = Σ_{j≥1} P(B ≥ j)^c.
double expected_min_binomial(std::uint32_t k, double q, std::uint32_t c) noexcept {
    if (q >= 1.0) return k;
    if (q <= 0.0) return 0.0;
    // pmf in log space (no underflow of (1 − q)^k near q = 1), then the tails.
    std::vector<double> pmf(k + 1);
    const double kd = k;
    double log_choose = 0.0;  // ln C(k, i), built up (no lgamma: it is not thread-safe)
    for (std::uint32_t i = 0; i <= k; ++i) {
        const double id = i;
        if (i > 0) log_choose += std::log((kd - id + 1) / id);
        pmf[i] = std::exp(log_choose + id * std::log(q) + (kd - id) * std::log1p(-q));
    }
    double sum = 0.0;
    double tail = 0.0;  // P(B ≥ j), accumulated from the top
    for (std::uint32_t j = k; j >= 1; --j) {
        tail += pmf[j];
        sum += std::pow(std::min(tail, 1.0), static_cast<double>(c));
    }
    return sum;
}

}  // namespace

double two_choice_false_positive_rate(double fill, std::uint32_t k,
                                      std::uint32_t choices) noexcept {
    const double per_group = std::pow(fill, static_cast<double>(k));
    // 1 − (1 − x)^c computed without cancellation for tiny x.
    return -std::expm1(static_cast<double>(choices) * std::log1p(-per_group));
}

double two_choice_fill_prediction(double bits_per_item, std::uint32_t k, std::uint32_t choices,
                                  std::uint32_t steps) noexcept {
    auto derivative = [&](double z) {
        return expected_min_binomial(k, 1.0 - z, choices) / bits_per_item;
    };
    double z = 0.0;
    const double h = 1.0 / steps;
    for (std::uint32_t s = 0; s < steps; ++s) {
        const double k1 = derivative(z);
        const double k2 = derivative(z + h * k1 / 2);
        const double k3 = derivative(z + h * k2 / 2);
        const double k4 = derivative(z + h * k3);
        z += h * (k1 + 2 * k2 + 2 * k3 + k4) / 6;
    }
    return z;
}

TwoChoiceBloomFilter::TwoChoiceBloomFilter(const TwoChoiceParams& params)
    : params_(params), tie_rng_(params.seed ^ tie_salt) {
    if (params.choices < 1 || params.choices > max_choices) {
        throw std::invalid_argument("number of choices must be in 1.." +
                                    std::to_string(max_choices));
    }
    if (params.k < 1 || params.k > max_probes) {
        throw std::invalid_argument("two-choice filter k must be in 1.." +
                                    std::to_string(max_probes));
    }
    if (params.bits < 1 || params.bits > max_bits) {
        throw std::invalid_argument("two-choice filter size must be in 1..2^40 bits");
    }
    probes_ = ProbeGenerator(params.scheme, params.bits, params.k, params.seed);
    words_.assign(static_cast<std::size_t>((params.bits + 63) / 64), 0);
}

Hash128 TwoChoiceBloomFilter::group_hash(const Hash128& hash, std::uint32_t group) const noexcept {
    if (group == 0) return hash;
    return hash128(&hash, sizeof hash, params_.seed ^ (group_salt * group));
}

void TwoChoiceBloomFilter::group_positions(const Hash128& hash, std::uint32_t group,
                                           std::uint64_t* out) const noexcept {
    probes_.generate(group_hash(hash, group), out);
}

std::uint32_t TwoChoiceBloomFilter::insert(const Hash128& hash) noexcept {
    const std::uint32_t k = params_.k;
    std::uint64_t pos[max_choices][max_probes];
    std::uint32_t best = 0;
    std::uint32_t best_new = std::numeric_limits<std::uint32_t>::max();
    std::uint32_t ties = 0;
    for (std::uint32_t g = 0; g < params_.choices; ++g) {
        group_positions(hash, g, pos[g]);
        // New ones = distinct zero positions: set them while counting, then undo.
        std::uint32_t fresh = 0;
        std::uint64_t marked[max_probes];
        for (std::uint32_t i = 0; i < k; ++i) {
            if (!bit(pos[g][i])) {
                words_[pos[g][i] >> 6] |= std::uint64_t{1} << (pos[g][i] & 63);
                marked[fresh++] = pos[g][i];
            }
        }
        for (std::uint32_t i = 0; i < fresh; ++i) {
            words_[marked[i] >> 6] &= ~(std::uint64_t{1} << (marked[i] & 63));
        }
        if (fresh < best_new) {
            best_new = fresh;
            best = g;
            ties = 1;
        } else if (fresh == best_new) {
            ++ties;  // reservoir choice: each tied group equally likely
            if (tie_rng_.below(ties) == 0) best = g;
        }
    }
    for (std::uint32_t i = 0; i < k; ++i) {
        words_[pos[best][i] >> 6] |= std::uint64_t{1} << (pos[best][i] & 63);
    }
    ++insertions_;
    return best;
}

bool TwoChoiceBloomFilter::contains(const Hash128& hash) const noexcept {
    std::uint64_t pos[max_probes];
    for (std::uint32_t g = 0; g < params_.choices; ++g) {
        group_positions(hash, g, pos);
        bool covered = true;
        for (std::uint32_t i = 0; i < params_.k && covered; ++i) covered = bit(pos[i]);
        if (covered) return true;
    }
    return false;
}

std::uint64_t TwoChoiceBloomFilter::count_ones() const noexcept {
    std::uint64_t ones = 0;
    for (const std::uint64_t w : words_) ones += static_cast<std::uint64_t>(std::popcount(w));
    return ones;
}

double TwoChoiceBloomFilter::fill_ratio() const noexcept {
    return static_cast<double>(count_ones()) / static_cast<double>(params_.bits);
}

double TwoChoiceBloomFilter::observed_false_positive_rate() const noexcept {
    return two_choice_false_positive_rate(fill_ratio(), params_.k, params_.choices);
}

TwoChoiceBloomFilter TwoChoiceBloomFilter::build_offline(const TwoChoiceParams& params,
                                                         std::span<const Hash128> items,
                                                         std::uint32_t rounds) {
    if (rounds < 1) throw std::invalid_argument("offline construction needs rounds >= 1");
    TwoChoiceBloomFilter filter(params);
    const std::uint32_t k = params.k;
    const std::uint32_t c = params.choices;
    const std::size_t stride = std::size_t{c} * k;
    // Every item's c·k positions, computed once.
    std::vector<std::uint64_t> positions(items.size() * stride);
    for (std::size_t item = 0; item < items.size(); ++item) {
        for (std::uint32_t g = 0; g < c; ++g) {
            filter.group_positions(items[item], g, &positions[item * stride + g * k]);
        }
    }
    // 8-bit counters: a saturated counter (255 covering groups) would only
    // keep its bit set, never lose one.
    CountingBloomFilter counts(CountingBloomParams{params.bits, k, 8, params.scheme, params.seed});
    std::vector<std::uint8_t> choice(items.size(), 0);
    Xoshiro256& rng = filter.tie_rng_;

    auto choose = [&](const std::uint64_t* item_positions) {
        std::uint32_t best = 0;
        std::uint32_t best_new = std::numeric_limits<std::uint32_t>::max();
        std::uint32_t ties = 0;
        std::uint64_t marked[max_probes];
        for (std::uint32_t g = 0; g < c; ++g) {
            const std::uint64_t* pos = item_positions + g * k;
            std::uint32_t fresh = 0;
            for (std::uint32_t i = 0; i < k; ++i) {
                if (counts.counter(pos[i]) == 0) {
                    counts.increment(pos[i]);  // mark so a repeated probe counts once
                    marked[fresh++] = pos[i];
                }
            }
            for (std::uint32_t i = 0; i < fresh; ++i) counts.decrement(marked[i]);
            if (fresh < best_new) {
                best_new = fresh;
                best = g;
                ties = 1;
            } else if (fresh == best_new) {
                ++ties;
                if (rng.below(ties) == 0) best = g;
            }
        }
        return best;
    };

    for (std::uint32_t round = 0; round < rounds; ++round) {
        for (std::size_t item = 0; item < items.size(); ++item) {
            const std::uint64_t* item_positions = &positions[item * stride];
            if (round > 0) {
                const std::uint64_t* old = item_positions + choice[item] * k;
                for (std::uint32_t i = 0; i < k; ++i) counts.decrement(old[i]);
            }
            const std::uint32_t g = choose(item_positions);
            choice[item] = static_cast<std::uint8_t>(g);
            const std::uint64_t* chosen = item_positions + g * k;
            for (std::uint32_t i = 0; i < k; ++i) counts.increment(chosen[i]);
        }
    }
    for (std::uint64_t i = 0; i < params.bits; ++i) {
        if (counts.counter(i) != 0) filter.words_[i >> 6] |= std::uint64_t{1} << (i & 63);
    }
    filter.insertions_ = items.size();
    return filter;
}

}  // namespace flowsketch::core
