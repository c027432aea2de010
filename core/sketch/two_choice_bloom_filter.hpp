// Bloom filter with the power of choices (Lumetta–Mitzenmacher, "Using the
// power of two choices to improve Bloom filters", seed 003, §3).
//
// c groups of k probes (c = 2 in the paper's title; c = 1 is a standard
// filter, c = 3 appears in its tables). Every inserted key is covered by at
// least one group: all k bits of that group are one. A query is positive if
// any group covers it, so with ρ the fraction of ones
//     f = 1 − (1 − ρ^k)^c                                   (§3, c = 2: ≈ 2ρ^k),
// and the gain comes from choosing groups so that fewer bits are set.
//  - online greedy (§3.1): each key takes the group that sets the fewest new
//    ones, ties broken at random; stochastically optimal among online rules;
//  - offline greedy (§3.2): round 1 is the online pass; each later round
//    deletes every key in turn from a counting filter and re-inserts it
//    greedily given the others' current choices (ties at random). "Rounds"
//    counts insertions per key, as in the paper's Table 3.
// Group g derives its own (h1, h2): group 0 uses the key's hash, group g ≥ 1
// the XXH3-128 of that hash seeded by (seed, g); probes within a group follow
// the chosen ProbeScheme.
//
// The fraction of ones after online insertion follows the differential
// equation (3.2): dz/dt = E[min(B_1, …, B_c)] / (m/n), B_i ~ Binomial(k, 1 − z),
// z(0) = 0, evaluated at t = 1 (Theorem 3.3); two_choice_fill_prediction
// solves it numerically.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/key/hash.hpp"
#include "core/sketch/probes.hpp"
#include "core/sketch/random.hpp"

namespace flowsketch::core {

inline constexpr std::uint32_t max_choices = 4;

/// 1 − (1 − ρ^k)^c (§3).
double two_choice_false_positive_rate(double fill, std::uint32_t k, std::uint32_t choices) noexcept;

/// z(1) of equation (3.2) by classical Runge–Kutta with `steps` steps.
/// E[min of c iid Binomial(k, q)] = Σ_{j=1..k} P(B ≥ j)^c.
double two_choice_fill_prediction(double bits_per_item, std::uint32_t k, std::uint32_t choices,
                                  std::uint32_t steps = 2000) noexcept;

struct TwoChoiceParams {
    std::uint64_t bits = 0;  ///< m
    std::uint32_t k = 0;     ///< probes per group
    std::uint32_t choices = 2;
    ProbeScheme scheme = ProbeScheme::double_hashing;
    std::uint64_t seed = 0;

    friend bool operator==(const TwoChoiceParams&, const TwoChoiceParams&) = default;
};

class TwoChoiceBloomFilter {
public:
    /// Throws std::invalid_argument unless 1 ≤ choices ≤ max_choices,
    /// 1 ≤ k ≤ max_probes and 1 ≤ bits ≤ 2^40.
    explicit TwoChoiceBloomFilter(const TwoChoiceParams& params);

    /// Offline greedy construction over `items` with `rounds` ≥ 1 insertions
    /// per item (rounds = 1 is the online greedy pass). Ties use a generator
    /// seeded from params.seed, so the result is a function of its inputs.
    static TwoChoiceBloomFilter build_offline(const TwoChoiceParams& params,
                                              std::span<const Hash128> items,
                                              std::uint32_t rounds);

    const TwoChoiceParams& params() const noexcept { return params_; }

    /// Online greedy insertion; returns the group chosen.
    std::uint32_t insert(const Hash128& hash) noexcept;
    /// Positive if any group covers the key.
    bool contains(const Hash128& hash) const noexcept;
    /// The k positions of `hash` in group `group` (< choices).
    void group_positions(const Hash128& hash, std::uint32_t group,
                         std::uint64_t* out) const noexcept;

    std::uint64_t insertions() const noexcept { return insertions_; }
    std::uint64_t count_ones() const noexcept;
    double fill_ratio() const noexcept;
    /// 1 − (1 − ρ^k)^c from the filter's own fill.
    double observed_false_positive_rate() const noexcept;

    std::span<const std::uint64_t> words() const noexcept { return words_; }
    /// For deserialisation (bits past m must stay zero).
    std::span<std::uint64_t> mutable_words() noexcept { return words_; }
    void set_insertions(std::uint64_t n) noexcept { insertions_ = n; }

private:
    Hash128 group_hash(const Hash128& hash, std::uint32_t group) const noexcept;
    bool bit(std::uint64_t i) const noexcept { return (words_[i >> 6] >> (i & 63) & 1) != 0; }

    TwoChoiceParams params_;
    ProbeGenerator probes_;
    Xoshiro256 tie_rng_;
    std::uint64_t insertions_ = 0;
    std::vector<std::uint64_t> words_;
};

}  // namespace flowsketch::core
