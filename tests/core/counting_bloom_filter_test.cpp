#include "core/sketch/counting_bloom_filter.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <set>
#include <stdexcept>

#include "test_keys.hpp"

namespace flowsketch::core {
namespace {

using testing::binomial_se;
using testing::key_hash;

TEST(CountingBloomMath, OverflowBound) {
    // m·(e·ln 2/j)^j (survey §2.5): at j = 16, ≈ 1.37·10^{−15} per counter.
    EXPECT_NEAR(counting_overflow_bound(1, 16), 1.3685e-15, 1e-18);
    EXPECT_NEAR(counting_overflow_bound(1000, 4), 1000 * std::pow(std::numbers::e *
                                                                   std::numbers::ln2 / 4, 4),
                1e-9);
    // The binomial union bound is tighter than the relaxed closed form.
    for (std::uint32_t j = 2; j <= 16; ++j) {
        const double exact = counting_overflow_binomial_bound(1 << 16, 10000, 4, j);
        const double loose = counting_overflow_bound(1 << 16, j);
        EXPECT_LE(exact, loose * (1 + 1e-9)) << "j = " << j;
        EXPECT_GT(exact, 0.0);
    }
    // j = 1: P(Bin ≥ 1) = 1 − (1 − 1/m)^{nk}.
    EXPECT_NEAR(counting_overflow_binomial_bound(100, 10, 2, 1),
                100 * (1 - std::pow(1 - 0.01, 20)), 1e-9);
}

TEST(CountingBloomFilter, RejectsBadParameters) {
    EXPECT_THROW(CountingBloomFilter(CountingBloomParams{0, 3}), std::invalid_argument);
    EXPECT_THROW(CountingBloomFilter(CountingBloomParams{100, 0}), std::invalid_argument);
    EXPECT_THROW(CountingBloomFilter(CountingBloomParams{100, 3, 5}), std::invalid_argument);
    EXPECT_THROW(CountingBloomFilter(CountingBloomParams{100, 3, 32}), std::invalid_argument);
}

TEST(CountingBloomFilter, CounterWidthsAndSaturation) {
    for (const std::uint32_t bits : {4u, 8u, 16u}) {
        CountingBloomFilter f(CountingBloomParams{37, 2, bits});  // odd size: partial last word
        const std::uint32_t max = (1u << bits) - 1;
        EXPECT_EQ(f.max_value(), max);
        for (std::uint32_t i = 0; i < max + 5; ++i) f.increment(36);
        EXPECT_EQ(f.counter(36), max) << "saturates, never wraps";
        EXPECT_EQ(f.counter(35), 0u) << "neighbours untouched";
        f.decrement(36);
        EXPECT_EQ(f.counter(36), max) << "a saturated counter is never decremented";
        EXPECT_EQ(f.saturated_count(), 1u);
        f.increment(0);
        f.decrement(0);
        f.decrement(0);
        EXPECT_EQ(f.counter(0), 0u) << "zero stays zero";
    }
}

TEST(CountingBloomFilter, InsertEraseContains) {
    for (const std::uint32_t bits : {4u, 8u, 16u}) {
        CountingBloomFilter f(CountingBloomParams{20000, 5, bits, ProbeScheme::double_hashing, 3});
        for (std::uint64_t i = 0; i < 2000; ++i) f.insert(key_hash(i));
        for (std::uint64_t i = 0; i < 1000; ++i) EXPECT_TRUE(f.erase(key_hash(i)));
        for (std::uint64_t i = 1000; i < 2000; ++i) {
            ASSERT_TRUE(f.contains(key_hash(i))) << "no false negatives after deletions";
        }
        // Erasing everything empties the filter exactly (nothing saturated here).
        EXPECT_EQ(f.saturated_count(), 0u);
        for (std::uint64_t i = 1000; i < 2000; ++i) EXPECT_TRUE(f.erase(key_hash(i)));
        EXPECT_EQ(f.nonzero_count(), 0u);
    }
}

TEST(CountingBloomFilter, EraseOfAbsentKeyChangesNothing) {
    CountingBloomFilter f(CountingBloomParams{1000, 4});
    f.insert(key_hash(1));
    const std::vector<std::uint64_t> before(f.words().begin(), f.words().end());
    std::uint64_t absent = 2;
    while (f.contains(key_hash(absent))) ++absent;
    EXPECT_FALSE(f.erase(key_hash(absent)));
    EXPECT_TRUE(std::equal(before.begin(), before.end(), f.words().begin()));
}

TEST(CountingBloomFilter, SaturatedKeyIsNeverLost) {
    CountingBloomFilter f(CountingBloomParams{1000, 4, 4});
    for (int i = 0; i < 20; ++i) f.insert(key_hash(9));
    std::uint64_t pos[max_probes];
    f.positions(key_hash(9), pos);
    const std::size_t distinct = std::set<std::uint64_t>(pos, pos + 4).size();
    EXPECT_EQ(f.saturated_count(), distinct);
    for (int i = 0; i < 20; ++i) f.erase(key_hash(9));
    EXPECT_TRUE(f.contains(key_hash(9))) << "saturated counters cost false positives, never "
                                            "false negatives";
}

TEST(CountingBloomFilter, FalsePositiveRateMatchesNonZeroFraction) {
    // Given the filter, Q fresh queries are Bernoulli((non-zero fraction)^k).
    // Bound: 4 binomial standard errors.
    CountingBloomFilter f(CountingBloomParams{48000, 6, 4, ProbeScheme::double_hashing, 8});
    for (std::uint64_t i = 0; i < 6000; ++i) f.insert(key_hash(i, 1));
    const double own = f.observed_false_positive_rate();
    std::uint64_t positives = 0;
    const std::uint64_t queries = 100000;
    for (std::uint64_t i = 0; i < queries; ++i) positives += f.contains(key_hash(i, 2));
    EXPECT_NEAR(static_cast<double>(positives) / queries, own,
                4 * binomial_se(own, static_cast<double>(queries)));
}

TEST(CountingBloomFilter, MaxCounterRespectsOverflowBound) {
    // k = (ln 2)·m/n rounded down, so the survey's bound applies. Over 30 trials,
    // the share with max ≥ j must not exceed the binomial union bound by more
    // than 3 binomial standard errors (j = 6, 7, 8, where the bound is < 1).
    const std::uint64_t m = 1 << 13;
    const std::uint64_t n = 1000;
    const std::uint32_t k = 5;  // ⌊ln 2 · 8.19⌋
    const int trials = 30;
    int at_least[17] = {};
    for (int t = 0; t < trials; ++t) {
        CountingBloomFilter f(CountingBloomParams{m, k, 16, ProbeScheme::independent,
                                                  static_cast<std::uint64_t>(t)});
        for (std::uint64_t i = 0; i < n; ++i) f.insert(key_hash(i, 100 + static_cast<unsigned>(t)));
        const std::uint32_t max = f.max_counter();
        for (std::uint32_t j = 0; j <= 16 && j <= max; ++j) ++at_least[j];
    }
    for (std::uint32_t j = 6; j <= 8; ++j) {
        const double bound = counting_overflow_binomial_bound(m, n, k, j);
        ASSERT_LT(bound, 1.0);
        EXPECT_LE(at_least[j] / double{trials}, bound + 3 * binomial_se(bound, trials))
            << "j = " << j;
        EXPECT_LE(bound, counting_overflow_bound(static_cast<double>(m), j));
    }
}

}  // namespace
}  // namespace flowsketch::core
