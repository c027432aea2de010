#include "core/sketch/two_choice_bloom_filter.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "core/sketch/bloom_filter.hpp"
#include "test_keys.hpp"

namespace flowsketch::core {
namespace {

using testing::binomial_se;
using testing::key_hash;

std::vector<Hash128> keys(std::uint64_t n, std::uint64_t stream) {
    std::vector<Hash128> out;
    for (std::uint64_t i = 0; i < n; ++i) out.push_back(key_hash(i, stream));
    return out;
}

TEST(TwoChoiceMath, FalsePositiveFromFill) {
    EXPECT_NEAR(two_choice_false_positive_rate(0.5, 7, 2), 1 - std::pow(1 - std::pow(0.5, 7), 2),
                1e-15);
    EXPECT_NEAR(two_choice_false_positive_rate(0.5, 25, 3), 3 * std::pow(0.5, 25), 1e-13);
}

TEST(TwoChoiceMath, DifferentialEquationMatchesClosedFormForOneChoice) {
    // c = 1: dz/dt = k(1 − z)/(m/n) ⇒ z(1) = 1 − e^{−k n/m} (§3.1, eq. 2.1).
    for (const std::uint32_t k : {3u, 6u, 11u}) {
        EXPECT_NEAR(two_choice_fill_prediction(8, k, 1), 1 - std::exp(-static_cast<double>(k) / 8.0), 1e-9);
    }
}

TEST(TwoChoiceMath, DifferentialEquationReproducesTable2) {
    // Lumetta–Mitzenmacher Table 2, "Prediction of (3.2)", printed to 4 decimals.
    struct Row {
        double bits_per_item;
        std::uint32_t k, c;
        double paper;
    };
    for (const Row r : {Row{8, 7, 2, 0.5296}, Row{8, 7, 3, 0.5019}, Row{16, 13, 2, 0.5187},
                        Row{16, 13, 3, 0.4994}, Row{32, 24, 2, 0.5016}, Row{32, 25, 3, 0.5022}}) {
        EXPECT_NEAR(two_choice_fill_prediction(r.bits_per_item, r.k, r.c), r.paper, 0.5e-4 + 1e-9)
            << "m/n = " << r.bits_per_item << " k = " << r.k << " c = " << r.c;
    }
}

TEST(TwoChoiceBloomFilter, RejectsBadParameters) {
    EXPECT_THROW(TwoChoiceBloomFilter(TwoChoiceParams{1000, 4, 0}), std::invalid_argument);
    EXPECT_THROW(TwoChoiceBloomFilter(TwoChoiceParams{1000, 4, 5}), std::invalid_argument);
    EXPECT_THROW(TwoChoiceBloomFilter(TwoChoiceParams{1000, 0, 2}), std::invalid_argument);
    EXPECT_THROW(TwoChoiceBloomFilter(TwoChoiceParams{0, 4, 2}), std::invalid_argument);
    EXPECT_THROW(TwoChoiceBloomFilter::build_offline(TwoChoiceParams{1000, 4, 2}, {}, 0),
                 std::invalid_argument);
}

TEST(TwoChoiceBloomFilter, OneChoiceIsAStandardBloomFilter) {
    TwoChoiceBloomFilter two(TwoChoiceParams{8191, 5, 1, ProbeScheme::double_hashing, 4});
    BloomFilter one(BloomParams{8191, 5, ProbeScheme::double_hashing, BloomLayout::standard, 4});
    for (std::uint64_t i = 0; i < 1000; ++i) {
        two.insert(key_hash(i));
        one.insert(key_hash(i));
    }
    EXPECT_TRUE(std::equal(two.words().begin(), two.words().end(), one.words().begin()));
}

TEST(TwoChoiceBloomFilter, NoFalseNegativesOnlineAndOffline) {
    const auto items = keys(2000, 1);
    for (const std::uint32_t c : {1u, 2u, 3u}) {
        for (const ProbeScheme scheme : {ProbeScheme::independent, ProbeScheme::double_hashing}) {
            const TwoChoiceParams p{16000, 7, c, scheme, 10 + c};
            TwoChoiceBloomFilter online(p);
            for (const Hash128& h : items) online.insert(h);
            const auto offline = TwoChoiceBloomFilter::build_offline(p, items, 5);
            for (const Hash128& h : items) {
                ASSERT_TRUE(online.contains(h));
                ASSERT_TRUE(offline.contains(h));
            }
        }
    }
}

TEST(TwoChoiceBloomFilter, OfflineOneRoundIsTheOnlinePass) {
    // Same greedy rule, same tie-breaking stream: identical bits.
    const auto items = keys(3000, 2);
    const TwoChoiceParams p{24000, 7, 2, ProbeScheme::double_hashing, 5};
    TwoChoiceBloomFilter online(p);
    for (const Hash128& h : items) online.insert(h);
    const auto offline = TwoChoiceBloomFilter::build_offline(p, items, 1);
    EXPECT_TRUE(std::equal(online.words().begin(), online.words().end(),
                           offline.words().begin()));
}

TEST(TwoChoiceBloomFilter, MoreRoundsSetFewerOnes) {
    // Each re-insertion never adds ones beyond what the deleted group held
    // (it picks the cheapest group given the others), so ones are
    // non-increasing over rounds; with 2000 items the drop is large.
    const auto items = keys(2000, 3);
    const TwoChoiceParams p{16000, 8, 2, ProbeScheme::double_hashing, 6};
    const auto one = TwoChoiceBloomFilter::build_offline(p, items, 1);
    const auto five = TwoChoiceBloomFilter::build_offline(p, items, 5);
    const auto ten = TwoChoiceBloomFilter::build_offline(p, items, 10);
    EXPECT_LT(five.count_ones(), one.count_ones());
    EXPECT_LE(ten.count_ones(), five.count_ones());
}

TEST(TwoChoiceBloomFilter, OnlineFillFollowsTheDifferentialEquation) {
    // 10 trials, n = 2000, m/n = 8, k = 7, c = 2. The mean fill must lie within
    // 4 standard errors of eq. (3.2), the standard error taken from the trials'
    // own spread (Theorem 3.2: the count of ones concentrates), plus 1/n for
    // the O(1/m) terms the equation drops.
    const int trials = 10;
    std::vector<double> fills;
    for (int t = 0; t < trials; ++t) {
        TwoChoiceBloomFilter f(TwoChoiceParams{16000, 7, 2, ProbeScheme::independent,
                                               static_cast<std::uint64_t>(t)});
        for (std::uint64_t i = 0; i < 2000; ++i) f.insert(key_hash(i, 50 + static_cast<unsigned>(t)));
        fills.push_back(f.fill_ratio());
    }
    double mean = 0;
    for (const double x : fills) mean += x / trials;
    double var = 0;
    for (const double x : fills) var += (x - mean) * (x - mean) / (trials - 1);
    const double se = std::sqrt(var / trials);
    EXPECT_NEAR(mean, two_choice_fill_prediction(8, 7, 2), 4 * se + 1.0 / 2000);
}

TEST(TwoChoiceBloomFilter, QueryRateMatchesFillFormula) {
    // Given the filter, a fresh key is positive with probability
    // 1 − (1 − ρ^k)^c (groups of a fresh key are independent of the filter).
    // Bound: 4 binomial standard errors over 100 000 queries.
    const auto items = keys(5000, 4);
    for (const std::uint32_t c : {2u, 3u}) {
        const auto f = TwoChoiceBloomFilter::build_offline(
            TwoChoiceParams{40000, 7, c, ProbeScheme::double_hashing, 3}, items, 3);
        const double own = f.observed_false_positive_rate();
        std::uint64_t positives = 0;
        for (std::uint64_t i = 0; i < 100000; ++i) positives += f.contains(key_hash(i, 5));
        EXPECT_NEAR(static_cast<double>(positives) / 1e5, own, 4 * binomial_se(own, 1e5)) << "c = " << c;
    }
}

}  // namespace
}  // namespace flowsketch::core
