// The Count-Min sketch of HyperLogLog counters: every key's true distinct
// count lies inside its bounds as often as δ says, heavy spreaders rank
// first, and sketches of parts of a stream merge into the sketch of all of it.
#include "core/sketch/distinct_sketch.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "core/key/hash.hpp"

namespace flowsketch::core {
namespace {

Hash128 seeded_key_hash(std::uint64_t key, std::uint64_t seed) { return hash128(&key, sizeof key, seed); }
std::uint64_t item_hash(std::uint64_t item, std::uint64_t seed) { return hash64(&item, sizeof item, seed ^ 0x5eed); }

// A skewed population: key k has 1 + (k % 50) distinct items, a few keys
// have thousands (a scanner, a DDoS victim); items repeat.
struct Population {
    std::vector<std::uint64_t> distinct;  // per key
};

Population feed(DistinctSketch& sketch, std::uint64_t seed, std::uint64_t keys) {
    Population p;
    for (std::uint64_t k = 0; k < keys; ++k) {
        const std::uint64_t n = k < 3 ? 2000 * (k + 1) : 1 + (k % 50);
        p.distinct.push_back(n);
        const Hash128 key = seeded_key_hash(k, seed);
        for (std::uint64_t i = 0; i < n; ++i) {
            for (int repeat = 0; repeat < 2; ++repeat) sketch.add(key, pair_hash(key, item_hash(i, seed)));
        }
    }
    return p;
}

TEST(DistinctSketch, TrueCountsLieInsideTheirBounds) {
    std::uint64_t checked = 0;
    std::uint64_t outside = 0;
    double delta = 0;
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
        DistinctSketch sketch;
        delta = sketch.params().delta();
        const Population p = feed(sketch, seed, 3000);
        const DistinctBounds total = sketch.total();
        std::uint64_t pairs = 0;
        for (const std::uint64_t n : p.distinct) pairs += n;
        EXPECT_LE(total.lower, static_cast<double>(pairs));
        EXPECT_GE(total.upper, static_cast<double>(pairs));
        for (std::uint64_t k = 0; k < p.distinct.size(); ++k) {
            const DistinctBounds b = sketch.bounds(seeded_key_hash(k, seed));
            const auto truth = static_cast<double>(p.distinct[k]);
            ++checked;
            outside += truth < b.lower || truth > b.upper ? 1 : 0;
            EXPECT_LE(b.lower, b.estimate);
            EXPECT_GE(b.upper, b.estimate);
        }
        // The heavy spreaders are found with a tight relative error.
        for (std::uint64_t k = 0; k < 3; ++k) {
            const double e = sketch.estimate(seeded_key_hash(k, seed));
            EXPECT_NEAR(e / static_cast<double>(p.distinct[k]), 1.0, 4 * hll::relative_error(256)) << k;
        }
    }
    // Each bound fails with probability at most δ; allow three standard
    // deviations of a binomial count above δ·checked.
    const double expected = delta * static_cast<double>(checked);
    EXPECT_LE(static_cast<double>(outside), expected + 3 * std::sqrt(expected) + 1)
        << outside << " of " << checked << " outside, δ = " << delta;
}

TEST(DistinctSketch, MergedPartsAreTheWhole) {
    DistinctSketch whole;
    DistinctSketch first;
    DistinctSketch second;
    for (std::uint64_t k = 0; k < 500; ++k) {
        const Hash128 key = seeded_key_hash(k, 9);
        for (std::uint64_t i = 0; i < 1 + k % 37; ++i) {
            const std::uint64_t pair = pair_hash(key, item_hash(i, 9));
            whole.add(key, pair);
            (i % 2 == 0 ? first : second).add(key, pair);
        }
    }
    first.merge(second);
    EXPECT_EQ(first.register_bytes(), whole.register_bytes());
    for (std::uint64_t k = 0; k < 500; ++k) {
        EXPECT_EQ(first.estimate(seeded_key_hash(k, 9)), whole.estimate(seeded_key_hash(k, 9)));
    }
    DistinctSketchParams other;
    other.width = 1093;
    EXPECT_THROW(first.merge(DistinctSketch(other)), std::invalid_argument);
}

TEST(DistinctSketch, RegistersRoundTrip) {
    DistinctSketch sketch;
    feed(sketch, 4, 200);
    DistinctSketch copy;
    copy.assign_registers(sketch.register_bytes());
    EXPECT_EQ(copy.estimate(seeded_key_hash(0, 4)), sketch.estimate(seeded_key_hash(0, 4)));
    EXPECT_EQ(copy.total().estimate, sketch.total().estimate);
    std::vector<std::uint8_t> short_bytes = sketch.register_bytes();
    short_bytes.pop_back();
    EXPECT_THROW(copy.assign_registers(short_bytes), std::invalid_argument);
}

TEST(DistinctSketch, AddSaysWhenAKeyMayHaveGrown) {
    DistinctSketch sketch;
    const Hash128 key = seeded_key_hash(1, 1);
    EXPECT_TRUE(sketch.add(key, pair_hash(key, item_hash(1, 1))));
    EXPECT_FALSE(sketch.add(key, pair_hash(key, item_hash(1, 1))));
}

TEST(DistinctSketch, RefusesBadDimensions) {
    DistinctSketchParams params;
    params.width = 1000;  // not a prime
    EXPECT_THROW(DistinctSketch{params}, std::invalid_argument);
    params = {};
    params.depth = 0;
    EXPECT_THROW(DistinctSketch{params}, std::invalid_argument);
    params = {};
    params.register_bits = 13;
    EXPECT_THROW(DistinctSketch{params}, std::invalid_argument);
}

}  // namespace
}  // namespace flowsketch::core
