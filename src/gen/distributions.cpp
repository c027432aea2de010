// Sampling distributions: the alias table's build and sample, Zipf weights.
#include "src/gen/distributions.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace flowsketch::gen {

AliasTable::AliasTable(std::span<const double> weights) {
    const std::size_t n = weights.size();
    if (n == 0 || n > std::numeric_limits<std::uint32_t>::max()) {
        throw std::invalid_argument("alias table needs 1 to 2^32-1 weights");
    }
    double total = 0;
    for (const double w : weights) {
        if (!std::isfinite(w) || w < 0) throw std::invalid_argument("alias weight not finite >= 0");
        total += w;
    }
    if (!(total > 0)) throw std::invalid_argument("alias weights sum to zero");

    // Vose's method: scaled probabilities n*p_i, paired small with large.
    constexpr double one = 0x1.0p53;
    std::vector<double> scaled(n);
    for (std::size_t i = 0; i < n; ++i) scaled[i] = weights[i] * static_cast<double>(n) / total;
    threshold_.assign(n, static_cast<std::uint64_t>(one));
    alias_.resize(n);
    std::vector<std::uint32_t> small;
    std::vector<std::uint32_t> large;
    for (std::size_t i = 0; i < n; ++i) {
        alias_[i] = static_cast<std::uint32_t>(i);
        (scaled[i] < 1.0 ? small : large).push_back(static_cast<std::uint32_t>(i));
    }
    while (!small.empty() && !large.empty()) {
        const std::uint32_t s = small.back();
        small.pop_back();
        const std::uint32_t l = large.back();
        threshold_[s] = static_cast<std::uint64_t>(scaled[s] * one);
        alias_[s] = l;
        scaled[l] = (scaled[l] + scaled[s]) - 1.0;
        if (scaled[l] < 1.0) {
            large.pop_back();
            small.push_back(l);
        }
    }
    // Leftovers are 1 up to rounding error: they keep threshold "always".
}

std::uint32_t AliasTable::sample(Rng& rng) const noexcept {
    const auto i = static_cast<std::size_t>(rng.below(alias_.size()));
    return (rng.next() >> 11) < threshold_[i] ? static_cast<std::uint32_t>(i) : alias_[i];
}

std::vector<double> zipf_weights(std::uint64_t n, double s) {
    std::vector<double> w(static_cast<std::size_t>(n));
    for (std::size_t r = 0; r < w.size(); ++r) {
        w[r] = s == 0 ? 1.0 : std::pow(static_cast<double>(r + 1), -s);
    }
    return w;
}

}  // namespace flowsketch::gen
