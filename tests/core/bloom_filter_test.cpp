#include "core/sketch/bloom_filter.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "test_keys.hpp"

namespace flowsketch::core {
namespace {

using testing::binomial_se;
using testing::key_hash;

constexpr ProbeScheme all_schemes[] = {ProbeScheme::independent, ProbeScheme::double_hashing,
                                       ProbeScheme::enhanced_square, ProbeScheme::enhanced_cube};

// Variance of the number of empty bins after N balls into m bins (exact):
// m(m−1)(1−2/m)^N + m(1−1/m)^N − m²(1−1/m)^{2N}.
double empty_bins_variance(double m, double balls) {
    return m * (m - 1) * std::pow(1 - 2 / m, balls) + m * std::pow(1 - 1 / m, balls) -
           m * m * std::pow(1 - 1 / m, 2 * balls);
}

TEST(BloomMath, FalsePositiveFormulaAndOptimalK) {
    // KM §8: c = m/n ∈ {4, 8, 12, 16} gives k = 3, 6, 8, 11.
    EXPECT_EQ(bloom_optimal_k(4, 1), 3u);
    EXPECT_EQ(bloom_optimal_k(8, 1), 6u);
    EXPECT_EQ(bloom_optimal_k(12, 1), 8u);
    EXPECT_EQ(bloom_optimal_k(16, 1), 11u);
    // The paper's p ≈ 0.021577 at c = 8, k = 6.
    EXPECT_NEAR(bloom_false_positive_rate(8, 1, 6), 0.021577, 5e-6);
    // Lumetta–Mitzenmacher Table 1, c = 1 rows (computed from the formula).
    EXPECT_NEAR(bloom_false_positive_rate(16, 1, 11), 4.588e-4, 5e-7);
    EXPECT_NEAR(bloom_false_positive_rate(32, 1, 22), 2.106e-7, 5e-10);
}

TEST(BloomMath, SizingForRate) {
    const BloomParams p = BloomParams::for_rate(1000, 0.01);
    EXPECT_EQ(p.k, 7u);                                    // ⌈log2 100⌉
    EXPECT_EQ(p.bits, 10099u);                             // ⌈1000·7/ln 2⌉
    EXPECT_LT(bloom_false_positive_rate(10099, 1000, 7), 0.01);
    const BloomParams q = BloomParams::for_rate(1000, 0.01, ProbeScheme::double_hashing,
                                                BloomLayout::partitioned);
    EXPECT_EQ(q.bits % q.k, 0u);
    EXPECT_THROW(BloomParams::for_rate(0, 0.01), std::invalid_argument);
    EXPECT_THROW(BloomParams::for_rate(10, 1.0), std::invalid_argument);
    EXPECT_THROW(BloomParams::for_rate(10, 0.0), std::invalid_argument);
}

TEST(BloomMath, LowerBoundRatioIsLog2EAtTheOptimum) {
    // Survey §2.2: at k = (m/n) ln 2, m / (n log2(1/f)) = log2 e ≈ 1.4427.
    const double f = std::pow(0.5, 16 * std::numbers::ln2);  // real-valued optimum, c = 16
    EXPECT_NEAR(bloom_space_ratio(16, 1, f), std::numbers::log2e, 1e-9);
    EXPECT_NEAR(bloom_lower_bound_bits(1000, 1.0 / 1024), 10000.0, 1e-9);
}

TEST(BloomFilter, RejectsBadParameters) {
    EXPECT_THROW(BloomFilter(BloomParams{0, 3}), std::invalid_argument);
    EXPECT_THROW(BloomFilter(BloomParams{100, 0}), std::invalid_argument);
    EXPECT_THROW(BloomFilter(BloomParams{100, 65}), std::invalid_argument);
    EXPECT_THROW(BloomFilter(BloomParams{100, 3, ProbeScheme::double_hashing,
                                         BloomLayout::partitioned}),
                 std::invalid_argument);  // 100 is not a multiple of 3
}

TEST(BloomFilter, NoFalseNegatives) {
    for (const ProbeScheme scheme : all_schemes) {
        for (const BloomLayout layout : {BloomLayout::standard, BloomLayout::partitioned}) {
            BloomFilter filter(BloomParams{6 * 1013, 6, scheme, layout, 99});
            for (std::uint64_t i = 0; i < 1000; ++i) filter.insert(key_hash(i));
            for (std::uint64_t i = 0; i < 1000; ++i) ASSERT_TRUE(filter.contains(key_hash(i)));
            EXPECT_EQ(filter.insertions(), 1000u);
        }
    }
}

TEST(BloomFilter, FalsePositiveRateMatchesFillAndFormula) {
    // Bounds two things per scheme and layout, n = 5000, m = 40 000 (c = 8), k = 6:
    //  (a) the fraction of ones ρ against 1 − e^{−kn/m}: the number of zero
    //      bits has the occupancy variance (standard layout; kn balls, m bins;
    //      partitioned: k independent parts of n balls in m/k bins);
    //  (b) the query false-positive rate over Q = 100 000 fresh keys against
    //      the filter's own ρ^k: given the filter, queries are Bernoulli(ρ^k).
    // Tolerance 4 standard errors: 16 comparisons share one fixed seed.
    const double n = 5000;
    const double m = 40002;  // multiple of k = 6 for the partitioned layout
    const std::uint32_t k = 6;
    const double q = std::exp(-static_cast<double>(k) * n / m);
    for (const ProbeScheme scheme : all_schemes) {
        for (const BloomLayout layout : {BloomLayout::standard, BloomLayout::partitioned}) {
            BloomFilter filter(BloomParams{40002, k, scheme, layout, 2024});
            for (std::uint64_t i = 0; i < 5000; ++i) filter.insert(key_hash(i, 1));
            const double var_zeros = layout == BloomLayout::standard
                                         ? empty_bins_variance(m, k * n)
                                         : k * empty_bins_variance(m / k, n);
            const double sd_fill = std::sqrt(var_zeros) / m;
            EXPECT_NEAR(filter.fill_ratio(), 1 - q, 4 * sd_fill)
                << probe_scheme_name(scheme) << " layout " << static_cast<int>(layout);

            const double own = filter.observed_false_positive_rate();
            const double queries = 100000;
            std::uint64_t positives = 0;
            for (std::uint64_t i = 0; i < 100000; ++i) positives += filter.contains(key_hash(i, 2));
            const double rate = static_cast<double>(positives) / queries;
            EXPECT_NEAR(rate, own, 4 * binomial_se(own, queries))
                << probe_scheme_name(scheme) << " layout " << static_cast<int>(layout);
            EXPECT_NEAR(filter.formula_false_positive_rate(), bloom_false_positive_rate(m, n, k),
                        1e-15);
        }
    }
}

TEST(BloomFilter, CardinalityFromZeroBits) {
    // n̂ = ln(Z/m)/(k ln(1 − 1/m)); by the delta method sd(n̂) ≈ sd(Z)/(Z·|k ln(1−1/m)|)
    // with the occupancy variance of Z. Bound: 4 sd.
    const double m = 1 << 16;
    const std::uint32_t k = 5;
    for (const double n : {100.0, 5000.0, 12000.0}) {
        BloomFilter filter(BloomParams{1 << 16, k, ProbeScheme::double_hashing,
                                       BloomLayout::standard, 5});
        for (std::uint64_t i = 0; i < static_cast<std::uint64_t>(n); ++i) {
            filter.insert(key_hash(i, 3));
        }
        const double zeros = m * std::pow(1 - 1 / m, k * n);
        const double sd = std::sqrt(empty_bins_variance(m, k * n)) /
                          (zeros * std::abs(k * std::log1p(-1 / m)));
        EXPECT_NEAR(filter.estimate_cardinality(), n, 4 * sd) << "n = " << n;
    }
    BloomFilter empty(BloomParams{1024, 3});
    EXPECT_DOUBLE_EQ(empty.estimate_cardinality(), 0.0);
}

TEST(BloomFilter, SpaceRatioNearLog2E) {
    // n = 5000, m = 80 000, k = 11: the optimum for c = 16. The ratio uses the
    // observed ρ^k; ±2% covers its sampling error (ln ρ^k has sd ≈ k·sd(ρ)/ρ ≈ 1%
    // of ln(1/f) ≈ 11).
    BloomFilter filter(BloomParams{80000, 11, ProbeScheme::double_hashing,
                                   BloomLayout::standard, 8});
    for (std::uint64_t i = 0; i < 5000; ++i) filter.insert(key_hash(i, 4));
    EXPECT_NEAR(filter.space_ratio_to_lower_bound(), std::numbers::log2e,
                0.02 * std::numbers::log2e);
}

TEST(BloomFilter, UnionIsTheFilterOfTheUnion) {
    for (const ProbeScheme scheme : all_schemes) {
        const BloomParams p{4096, 4, scheme, BloomLayout::standard, 77};
        BloomFilter a(p);
        BloomFilter b(p);
        BloomFilter both(p);
        for (std::uint64_t i = 0; i < 300; ++i) {
            a.insert(key_hash(i));
            both.insert(key_hash(i));
        }
        for (std::uint64_t i = 200; i < 600; ++i) {
            b.insert(key_hash(i));
            both.insert(key_hash(i));
        }
        a.union_with(b);
        EXPECT_TRUE(std::equal(a.words().begin(), a.words().end(), both.words().begin()));
    }
}

TEST(BloomFilter, UnionRejectsMismatchAndSelf) {
    BloomFilter a(BloomParams{4096, 4, ProbeScheme::double_hashing, BloomLayout::standard, 1});
    BloomFilter other_seed(BloomParams{4096, 4, ProbeScheme::double_hashing,
                                       BloomLayout::standard, 2});
    BloomFilter other_k(BloomParams{4096, 5, ProbeScheme::double_hashing,
                                    BloomLayout::standard, 1});
    BloomFilter other_size(BloomParams{2048, 4, ProbeScheme::double_hashing,
                                       BloomLayout::standard, 1});
    EXPECT_THROW(a.union_with(other_seed), std::invalid_argument);
    EXPECT_THROW(a.union_with(other_k), std::invalid_argument);
    EXPECT_THROW(a.union_with(other_size), std::invalid_argument);
    EXPECT_THROW(a.union_with(a), std::invalid_argument);
}

TEST(BloomFilter, HalvingEqualsBuildingAtHalfSize) {
    // Probes are masked 64-bit values, so OR-ing the halves gives exactly the
    // filter built at half size (survey §2.4) — for every scheme, down to 32 bits.
    for (const ProbeScheme scheme : all_schemes) {
        for (const std::uint64_t bits : {std::uint64_t{1} << 14, std::uint64_t{64}}) {
            BloomFilter big(BloomParams{bits, 5, scheme, BloomLayout::standard, 31});
            BloomFilter small(BloomParams{bits / 2, 5, scheme, BloomLayout::standard, 31});
            for (std::uint64_t i = 0; i < 700; ++i) {
                big.insert(key_hash(i));
                small.insert(key_hash(i));
            }
            big.halve();
            EXPECT_EQ(big.bits(), bits / 2);
            ASSERT_EQ(big.words().size(), small.words().size());
            EXPECT_TRUE(std::equal(big.words().begin(), big.words().end(), small.words().begin()))
                << probe_scheme_name(scheme) << " " << bits;
            for (std::uint64_t i = 0; i < 700; ++i) ASSERT_TRUE(big.contains(key_hash(i)));
        }
    }
    BloomFilter odd(BloomParams{1000, 3});
    EXPECT_THROW(odd.halve(), std::invalid_argument);
    BloomFilter parts(BloomParams{1024, 4, ProbeScheme::double_hashing, BloomLayout::partitioned});
    EXPECT_THROW(parts.halve(), std::invalid_argument);
}

TEST(BloomFilter, IntersectionEstimate) {
    // |S1| = |S2| = 4000 with 1500 in common, m = 2^16, k = 4. Delta method on
    // ln(m·Z∪/(Z1·Z2)) with the occupancy variance of each zero count, treated as
    // independent (which overstates the variance: they are positively correlated).
    // Bound: 4 sd.
    const double m = 1 << 16;
    const std::uint32_t k = 4;
    const BloomParams p{1 << 16, k, ProbeScheme::double_hashing, BloomLayout::standard, 12};
    BloomFilter a(p);
    BloomFilter b(p);
    for (std::uint64_t i = 0; i < 4000; ++i) a.insert(key_hash(i, 5));
    for (std::uint64_t i = 2500; i < 6500; ++i) b.insert(key_hash(i, 5));
    auto rel_var = [&](double items) {
        const double z = m * std::pow(1 - 1 / m, k * items);
        return empty_bins_variance(m, k * items) / (z * z);
    };
    const double sd = std::sqrt(rel_var(4000) * 2 + rel_var(6500)) /
                      std::abs(k * std::log1p(-1 / m));
    EXPECT_NEAR(BloomFilter::estimate_intersection(a, b), 1500.0, 4 * sd);
    BloomFilter disjoint(p);
    for (std::uint64_t i = 10000; i < 14000; ++i) disjoint.insert(key_hash(i, 5));
    EXPECT_NEAR(BloomFilter::estimate_intersection(a, disjoint), 0.0, 4 * sd);
}

}  // namespace
}  // namespace flowsketch::core
