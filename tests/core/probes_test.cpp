#include "core/sketch/probes.hpp"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "test_keys.hpp"

namespace flowsketch::core {
namespace {

using testing::key_hash;

constexpr ProbeScheme all_schemes[] = {ProbeScheme::independent, ProbeScheme::double_hashing,
                                       ProbeScheme::enhanced_square, ProbeScheme::enhanced_cube};

TEST(Probes, RejectsBadParameters) {
    EXPECT_THROW(ProbeGenerator(ProbeScheme::double_hashing, 100, 0, 1), std::invalid_argument);
    EXPECT_THROW(ProbeGenerator(ProbeScheme::double_hashing, 100, max_probes + 1, 1),
                 std::invalid_argument);
    EXPECT_THROW(ProbeGenerator(ProbeScheme::double_hashing, 0, 3, 1), std::invalid_argument);
    EXPECT_THROW(ProbeGenerator(static_cast<ProbeScheme>(9), 100, 3, 1), std::invalid_argument);
}

TEST(Probes, DoubleHashingFormulaForPrimeRange) {
    // g_i = (h1 + i·h2 + f(i)) mod m, checked against the formula computed
    // directly (the generator steps incrementally).
    const std::uint64_t m = 10007;  // prime
    for (const ProbeScheme scheme : {ProbeScheme::double_hashing, ProbeScheme::enhanced_square,
                                     ProbeScheme::enhanced_cube}) {
        const ProbeGenerator gen(scheme, m, 12, 7);
        for (std::uint64_t key = 0; key < 200; ++key) {
            const Hash128 h = key_hash(key);
            std::uint64_t out[max_probes];
            gen.generate(h, out);
            std::uint64_t step = h.h2 % m;
            if (step == 0) step = 1;
            for (std::uint64_t i = 0; i < 12; ++i) {
                std::uint64_t f = 0;  // every term below is < 2^20: no wrap-around
                if (scheme == ProbeScheme::enhanced_square) f = i * i;
                if (scheme == ProbeScheme::enhanced_cube) f = i * i * i;
                ASSERT_EQ(out[i], (h.h1 % m + i * step + f) % m);
            }
        }
    }
}

TEST(Probes, PowerOfTwoUsesOddStepAndMask) {
    const std::uint64_t m = 1 << 12;
    const ProbeGenerator gen(ProbeScheme::double_hashing, m, 20, 3);
    for (std::uint64_t key = 0; key < 500; ++key) {
        Hash128 h = key_hash(key);
        h.h2 &= ~std::uint64_t{1};  // even h2: the generator must still step by an odd amount
        std::uint64_t out[max_probes];
        gen.generate(h, out);
        std::set<std::uint64_t> distinct(out, out + 20);
        EXPECT_EQ(distinct.size(), 20u) << "an odd step is a unit mod 2^b: probes are distinct";
        for (std::uint64_t i = 0; i < 20; ++i) {
            EXPECT_EQ(out[i], (h.h1 + i * (h.h2 | 1)) & (m - 1));
        }
    }
}

TEST(Probes, PrimeRangeProbesAreDistinct) {
    const ProbeGenerator gen(ProbeScheme::double_hashing, 101, 30, 3);
    for (std::uint64_t key = 0; key < 500; ++key) {
        std::uint64_t out[max_probes];
        gen.generate(key_hash(key), out);
        EXPECT_EQ(std::set<std::uint64_t>(out, out + 30).size(), 30u);
    }
}

TEST(Probes, AllInRangeAndDeterministic) {
    for (const ProbeScheme scheme : all_schemes) {
        for (const std::uint64_t m : {1ull, 2ull, 97ull, 1000ull, 1024ull, 1ull << 40}) {
            const ProbeGenerator a(scheme, m, 9, 11);
            const ProbeGenerator b(scheme, m, 9, 11);
            for (std::uint64_t key = 0; key < 100; ++key) {
                std::uint64_t x[max_probes];
                std::uint64_t y[max_probes];
                a.generate(key_hash(key), x);
                b.generate(key_hash(key), y);
                for (int i = 0; i < 9; ++i) {
                    ASSERT_LT(x[i], m);
                    ASSERT_EQ(x[i], y[i]);
                }
            }
        }
    }
}

TEST(Probes, IndependentSchemeDependsOnSeed) {
    const ProbeGenerator a(ProbeScheme::independent, 1 << 20, 4, 1);
    const ProbeGenerator b(ProbeScheme::independent, 1 << 20, 4, 2);
    int same = 0;
    for (std::uint64_t key = 0; key < 100; ++key) {
        std::uint64_t x[max_probes];
        std::uint64_t y[max_probes];
        a.generate(key_hash(key), x);
        b.generate(key_hash(key), y);
        same += x[0] == y[0] ? 1 : 0;
    }
    EXPECT_LE(same, 1);  // a collision has probability 100/2^20
}

TEST(Probes, EachProbeIsUniform) {
    // Chi-square goodness of fit of probe i over 64 cells, for every scheme and
    // probe: 64 000 draws, 63 degrees of freedom; 63 + 5·sqrt(2·63) ≈ 119 is
    // a 5-sigma bound on the statistic (fixed seed, so deterministic anyway).
    const std::uint64_t m = 1009;
    for (const ProbeScheme scheme : all_schemes) {
        const ProbeGenerator gen(scheme, m, 6, 5);
        std::vector<std::vector<double>> cells(6, std::vector<double>(64, 0.0));
        const int draws = 64000;
        for (int key = 0; key < draws; ++key) {
            std::uint64_t out[max_probes];
            gen.generate(key_hash(static_cast<std::uint64_t>(key), 42), out);
            for (int i = 0; i < 6; ++i) cells[static_cast<std::size_t>(i)][out[i] * 64 / m] += 1;
        }
        for (int i = 0; i < 6; ++i) {
            double chi2 = 0.0;
            for (int c = 0; c < 64; ++c) {
                const double lo = std::ceil(c * static_cast<double>(m) / 64);
                const double hi = std::ceil((c + 1) * static_cast<double>(m) / 64);
                const double expected = draws * (hi - lo) / static_cast<double>(m);
                const double d = cells[static_cast<std::size_t>(i)][static_cast<std::size_t>(c)] -
                                 expected;
                chi2 += d * d / expected;
            }
            EXPECT_LT(chi2, 119.0) << probe_scheme_name(scheme) << " probe " << i;
        }
    }
}

}  // namespace
}  // namespace flowsketch::core
