#include "core/sketch/count_min.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/sketch/random.hpp"
#include "test_keys.hpp"

namespace flowsketch::core {
namespace {

using testing::key_hash;

// A Zipf(s) stream over `universe` keys by inverse CDF; exact truth alongside.
struct ZipfStream {
    std::vector<std::uint64_t> updates;  // key ids
    std::vector<std::uint64_t> truth;    // count per key id
};

ZipfStream zipf_stream(std::uint64_t universe, double s, std::uint64_t length, std::uint64_t seed) {
    std::vector<double> cdf(universe);
    double sum = 0;
    for (std::uint64_t i = 0; i < universe; ++i) {
        sum += std::pow(static_cast<double>(i + 1), -s);
        cdf[i] = sum;
    }
    ZipfStream out;
    out.truth.assign(universe, 0);
    Xoshiro256 rng(seed);
    for (std::uint64_t t = 0; t < length; ++t) {
        const double u = rng.uniform() * sum;
        const auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
        const auto key = static_cast<std::uint64_t>(std::min<std::ptrdiff_t>(
            it - cdf.begin(), static_cast<std::ptrdiff_t>(universe - 1)));
        out.updates.push_back(key);
        ++out.truth[key];
    }
    return out;
}

CountMinParams params_of(CountMinVariant variant, std::uint32_t width, std::uint32_t depth,
                         std::uint64_t seed, bool conservative = false, std::uint32_t lanes = 1) {
    CountMinParams p;
    p.variant = variant;
    p.width = width;
    p.depth = depth;
    p.seed = seed;
    p.conservative_update = conservative;
    p.lanes = lanes;
    return p;
}

TEST(CountMinParams, ClassicSizing) {
    const auto standard = CountMinParams::classic_for_error(0.01, 0.01, CountMinVariant::standard);
    EXPECT_EQ(standard.width, 272u);  // ⌈e/0.01⌉
    EXPECT_EQ(standard.depth, 5u);    // ⌈ln 100⌉
    EXPECT_NEAR(standard.delta(), std::pow(1 / (0.01 * 272), 5), 1e-15);  // ≈ e^−5
    EXPECT_LE(standard.delta(), 0.01);

    // KM: w = smallest prime ≥ 2e/ε = 543.66 → 547; d smallest with
    // 2/(εw²) + (2/(εw))^d ≤ δ: (0.3656)^5 + 6.7e-4 = 0.0073 (d = 4: 0.0185).
    const auto km = CountMinParams::classic_for_error(0.01, 0.01, CountMinVariant::kirsch_mitzenmacher);
    EXPECT_EQ(km.width, 547u);
    EXPECT_EQ(km.depth, 5u);
    EXPECT_LE(km.delta(), 0.01);
    EXPECT_EQ(km.epsilon(), 0.01);
    EXPECT_NEAR(kirsch_mitzenmacher_delta(0.01, 547, 5),
                2 / (0.01 * 547.0 * 547.0) + std::pow(2 / (0.01 * 547.0), 5), 1e-15);

    EXPECT_THROW(CountMinParams::classic_for_error(0.0, 0.1, CountMinVariant::standard),
                 std::invalid_argument);
    EXPECT_THROW(CountMinParams::for_error(0.1, 1.0, CountMinVariant::standard),
                 std::invalid_argument);
}

// for_error trades width for rows: the fewest rows within 25% more cells
// than the classic sizing, the guarantee stated at the ε asked for.
TEST(CountMinParams, ForErrorSizesForFewRows) {
    // The CLI's default, ε = δ = 0.001 (KM): classic 5,437 × 7 = 38,059 cells.
    // Depth 4 needs (2/(εw))^4 + 2/(εw²) ≤ δ: w ≥ 11,295, the prime 11,299
    // (45,196 cells, 1.19×); depth 3 would need w ≥ 20,000 (1.58×).
    const auto km = CountMinParams::for_error(0.001, 0.001, CountMinVariant::kirsch_mitzenmacher);
    EXPECT_EQ(km.depth, 4u);
    EXPECT_EQ(km.width, 11299u);
    EXPECT_EQ(km.epsilon(), 0.001);
    EXPECT_LE(km.delta(), 0.001);
    EXPECT_GT(kirsch_mitzenmacher_delta(0.001, 11287, 4), 0.001);  // the prime below is too narrow

    // Standard, ε = 0.01, δ = 0.001: classic 272 × 7 = 1,904 cells; depth 4
    // needs 1/(εw) ≤ δ^¼: w = 563 (2,252 cells, 1.18×).
    const auto standard = CountMinParams::for_error(0.01, 0.001, CountMinVariant::standard);
    EXPECT_EQ(standard.depth, 4u);
    EXPECT_EQ(standard.width, 563u);
    EXPECT_EQ(standard.epsilon(), 0.01);
    EXPECT_LE(standard.delta(), 0.001);
    EXPECT_GT(standard_delta(0.01, 562, 4), 0.001);

    // Over a grid, every pair is met at the ε asked for, within the memory budget.
    for (const auto variant : {CountMinVariant::standard, CountMinVariant::kirsch_mitzenmacher}) {
        for (const double epsilon : {0.1, 0.01, 0.001, 0.0001}) {
            for (const double delta : {0.1, 0.01, 0.001, 1e-6}) {
                const auto p = CountMinParams::for_error(epsilon, delta, variant);
                const auto classic = CountMinParams::classic_for_error(epsilon, delta, variant);
                SCOPED_TRACE(::testing::Message() << variant_name(variant) << " " << epsilon << " " << delta);
                EXPECT_EQ(p.epsilon(), epsilon);
                EXPECT_LE(p.delta(), delta);
                EXPECT_LE(p.depth, classic.depth);
                EXPECT_LE(static_cast<double>(p.width) * p.depth,
                          1.25 * static_cast<double>(classic.width) * classic.depth);
                EXPECT_NO_THROW(CountMinSketch{p});
            }
        }
    }
}

TEST(CountMinParams, NextPrime) {
    EXPECT_EQ(next_prime(0), 2u);
    EXPECT_EQ(next_prime(2), 2u);
    EXPECT_EQ(next_prime(544), 547u);
    EXPECT_EQ(next_prime(7919), 7919u);
    EXPECT_EQ(next_prime(7920), 7927u);
}

TEST(CountMinSketch, RejectsBadParameters) {
    EXPECT_THROW(CountMinSketch(params_of(CountMinVariant::standard, 1, 3, 0)),
                 std::invalid_argument);
    EXPECT_THROW(CountMinSketch(params_of(CountMinVariant::standard, 100, 0, 0)),
                 std::invalid_argument);
    EXPECT_THROW(CountMinSketch(params_of(CountMinVariant::kirsch_mitzenmacher, 100, 3, 0)),
                 std::invalid_argument)
        << "KM needs a prime width";
    EXPECT_THROW(CountMinSketch(params_of(CountMinVariant::standard, 100, 3, 0, false, 9)),
                 std::invalid_argument);
}

TEST(CountMinSketch, KirschMitzenmacherRowFormula) {
    // g_j = (h1 + j·h2) mod w with w prime (KM §9.2), checked through column().
    const CountMinSketch sketch(params_of(CountMinVariant::kirsch_mitzenmacher, 547, 6, 9));
    for (std::uint64_t i = 0; i < 500; ++i) {
        const Hash128 h = key_hash(i);
        for (std::uint32_t j = 0; j < 6; ++j) {
            const std::uint64_t expected = (h.h1 % 547 + j * (h.h2 % 547)) % 547;  // < 2^13
            ASSERT_EQ(sketch.column(h, j), expected);
        }
    }
}

TEST(CountMinSketch, ModByReciprocalIsExact) {
    const std::uint64_t widths[] = {1, 2, 3, 4, 5, 7, 547, 5437, 65536, (1ULL << 31),
                                    4294967291ULL, 4294967295ULL, 4294967296ULL,
                                    (1ULL << 63), 0xffffffffffffffffULL};
    SplitMix64 rng(3);
    for (const std::uint64_t w : widths) {
        const std::uint64_t reciprocal = 0xffffffffffffffffULL / w;
        std::vector<std::uint64_t> xs = {0, 1, w - 1, w, w + 1, 0xffffffffffffffffULL,
                                         0xfffffffffffffffeULL, 0x8000000000000000ULL};
        const std::uint64_t top = 0xffffffffffffffffULL / w * w;  // largest multiple of w
        for (const std::uint64_t d : {0ULL, 1ULL, 2ULL}) {
            xs.push_back(top - d);
            if (top >= w + d) xs.push_back(top - w - d);
        }
        for (int i = 0; i < 20000; ++i) xs.push_back(rng.next());
        for (const std::uint64_t x : xs) ASSERT_EQ(mod_by_reciprocal(x, w, reciprocal), x % w) << x << " mod " << w;
    }
}

TEST(CountMinSketch, MultiLaneUpdateMatchesOneLaneSketches) {
    // Each lane count's fixed-lane update (FlowMeasurement uses 4) against 1-lane sketches.
    const auto stream = zipf_stream(2000, 1.1, 5000, 5);
    for (const CountMinVariant variant : {CountMinVariant::kirsch_mitzenmacher, CountMinVariant::standard}) {
        for (std::uint32_t lanes = 1; lanes <= 8; ++lanes) {
            CountMinSketch many(params_of(variant, 211, 4, 6, false, lanes));
            std::vector<CountMinSketch> ones;
            for (std::uint32_t lane = 0; lane < lanes; ++lane) ones.emplace_back(params_of(variant, 211, 4, 6));
            for (const std::uint64_t key : stream.updates) {
                std::vector<std::uint64_t> w(lanes);
                for (std::uint32_t lane = 0; lane < lanes; ++lane) w[lane] = (key * (lane + 3)) % 1500;
                std::vector<std::uint64_t> estimates(lanes);
                many.update_and_estimate(key_hash(key), w, estimates);
                for (std::uint32_t lane = 0; lane < lanes; ++lane) {
                    ones[lane].update(key_hash(key), w[lane]);
                    ASSERT_EQ(estimates[lane], ones[lane].estimate(key_hash(key))) << lanes << " lanes";
                }
            }
            for (std::uint32_t lane = 0; lane < lanes; ++lane) EXPECT_EQ(many.total(lane), ones[lane].total());
        }
    }
}

TEST(CountMinSketch, StandardRowsAreInRangeAndDiffer) {
    const CountMinSketch sketch(params_of(CountMinVariant::standard, 272, 5, 9));
    int same_as_row0 = 0;
    for (std::uint64_t i = 0; i < 1000; ++i) {
        const Hash128 h = key_hash(i);
        for (std::uint32_t j = 0; j < 5; ++j) ASSERT_LT(sketch.column(h, j), 272u);
        same_as_row0 += sketch.column(h, 0) == sketch.column(h, 1) ? 1 : 0;
    }
    // Independent rows agree with probability 1/272: ≈ 3.7 of 1000; 20 is > 8 sd.
    EXPECT_LT(same_as_row0, 20);
}

class CountMinGuarantee : public ::testing::TestWithParam<CountMinVariant> {};

TEST_P(CountMinGuarantee, NeverUnderestimatesAndMeetsEpsilonDelta) {
    // Zipf(1.1) stream, 5000 keys, N = 100 000; ε = 0.01, δ = 0.1 by for_error.
    // Per key, P(error > εN) ≤ δ over the hashing. The failure share F of one
    // sketch has E[F] ≤ δ; over 6 seeds we require mean(F) ≤ δ + 3·sd(F)/√6,
    // sd taken from the seeds themselves. Separately: estimate ≥ truth always.
    const double epsilon = 0.01;
    const double delta = 0.1;
    const auto stream = zipf_stream(5000, 1.1, 100000, 77);
    const double n_total = static_cast<double>(stream.updates.size());
    std::vector<double> shares;
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
        CountMinParams p = CountMinParams::for_error(epsilon, delta, GetParam());
        p.seed = seed;
        CountMinSketch sketch(p);
        for (const std::uint64_t key : stream.updates) sketch.update(key_hash(key, seed), 1);
        ASSERT_EQ(sketch.total(), stream.updates.size());
        std::uint64_t failures = 0;
        std::uint64_t queried = 0;
        for (std::uint64_t key = 0; key < stream.truth.size(); ++key) {
            const std::uint64_t est = sketch.estimate(key_hash(key, seed));
            ASSERT_GE(est, stream.truth[key]) << "Count-Min never underestimates";
            ASSERT_LE(sketch.lower_bound(est), std::max(est, stream.truth[key]));
            failures += static_cast<double>(est - stream.truth[key]) > p.epsilon() * n_total;
            ++queried;
        }
        shares.push_back(static_cast<double>(failures) / static_cast<double>(queried));
    }
    double mean = 0;
    for (const double s : shares) mean += s / 6;
    double var = 0;
    for (const double s : shares) var += (s - mean) * (s - mean) / 5;
    EXPECT_LE(mean, delta + 3 * std::sqrt(var / 6)) << "share of keys with error > εN";
}

INSTANTIATE_TEST_SUITE_P(Variants, CountMinGuarantee,
                         ::testing::Values(CountMinVariant::standard,
                                           CountMinVariant::kirsch_mitzenmacher));

TEST(CountMinSketch, ConservativeUpdateNeverUnderestimatesAndNeverExceedsPlain) {
    const auto stream = zipf_stream(3000, 1.0, 50000, 5);
    for (const auto variant : {CountMinVariant::standard, CountMinVariant::kirsch_mitzenmacher}) {
        CountMinSketch plain(params_of(variant, 211, 4, 3, false));
        CountMinSketch conservative(params_of(variant, 211, 4, 3, true));
        for (const std::uint64_t key : stream.updates) {
            plain.update(key_hash(key), 1);
            conservative.update(key_hash(key), 1);
        }
        for (std::uint64_t key = 0; key < stream.truth.size(); ++key) {
            const auto c = conservative.estimate(key_hash(key));
            ASSERT_GE(c, stream.truth[key]);
            ASSERT_LE(c, plain.estimate(key_hash(key)));
        }
    }
}

TEST(CountMinSketch, MergeIsExact) {
    const auto stream = zipf_stream(2000, 1.0, 20000, 6);
    for (const auto variant : {CountMinVariant::standard, CountMinVariant::kirsch_mitzenmacher}) {
        const auto p = params_of(variant, 101, 4, 8, false, 2);
        CountMinSketch a(p);
        CountMinSketch b(p);
        CountMinSketch whole(p);
        for (std::size_t t = 0; t < stream.updates.size(); ++t) {
            const std::uint64_t w[2] = {1, stream.updates[t] % 7 + 40};
            (t % 3 == 0 ? a : b).update(key_hash(stream.updates[t]), w);
            whole.update(key_hash(stream.updates[t]), w);
        }
        a.merge(b);
        EXPECT_TRUE(std::equal(a.counters().begin(), a.counters().end(),
                               whole.counters().begin()));
        EXPECT_EQ(a.total(0), whole.total(0));
        EXPECT_EQ(a.total(1), whole.total(1));
    }
}

TEST(CountMinSketch, MergeRejectsMismatchesAndSelf) {
    const auto base = params_of(CountMinVariant::kirsch_mitzenmacher, 101, 4, 8);
    CountMinSketch a(base);
    EXPECT_THROW(a.merge(a), std::invalid_argument);
    auto other = base;
    other.width = 103;
    EXPECT_THROW(a.merge(CountMinSketch(other)), std::invalid_argument);
    other = base;
    other.depth = 5;
    EXPECT_THROW(a.merge(CountMinSketch(other)), std::invalid_argument);
    other = base;
    other.seed = 9;
    EXPECT_THROW(a.merge(CountMinSketch(other)), std::invalid_argument);
    other = base;
    other.lanes = 2;
    EXPECT_THROW(a.merge(CountMinSketch(other)), std::invalid_argument);
    other = base;
    other.variant = CountMinVariant::standard;
    EXPECT_THROW(a.merge(CountMinSketch(other)), std::invalid_argument);
    other = base;
    other.conservative_update = true;
    EXPECT_THROW(a.merge(CountMinSketch(other)), std::invalid_argument);
    // Only the wording of the guarantee differs: merged, a keeps its own ε.
    other = base;
    other.stated_epsilon = 0.25;
    CountMinSketch stated(other);
    stated.update(key_hash(1), 3);
    EXPECT_NO_THROW(a.merge(stated));
    EXPECT_EQ(a.estimate(key_hash(1)), 3u);
    EXPECT_EQ(a.params().stated_epsilon, base.stated_epsilon);
}

TEST(CountMinSketch, LanesAreIndependent) {
    // A 2-lane sketch answers exactly as two 1-lane sketches with the same hashing.
    const auto stream = zipf_stream(1000, 1.0, 10000, 7);
    for (const bool conservative : {false, true}) {
        CountMinSketch two(params_of(CountMinVariant::kirsch_mitzenmacher, 97, 3, 4,
                                     conservative, 2));
        CountMinSketch packets(params_of(CountMinVariant::kirsch_mitzenmacher, 97, 3, 4,
                                         conservative));
        CountMinSketch bytes(params_of(CountMinVariant::kirsch_mitzenmacher, 97, 3, 4,
                                       conservative));
        for (const std::uint64_t key : stream.updates) {
            const std::uint64_t size = 60 + key % 1400;
            const std::uint64_t w[2] = {1, size};
            two.update(key_hash(key), w);
            packets.update(key_hash(key), 1);
            bytes.update(key_hash(key), size);
        }
        for (std::uint64_t key = 0; key < 1000; ++key) {
            ASSERT_EQ(two.estimate(key_hash(key), 0), packets.estimate(key_hash(key)));
            ASSERT_EQ(two.estimate(key_hash(key), 1), bytes.estimate(key_hash(key)));
        }
        two.clear_lanes(1, 1);
        EXPECT_EQ(two.total(1), 0u);
        EXPECT_EQ(two.total(0), stream.updates.size());
        EXPECT_EQ(two.estimate(key_hash(0), 0), packets.estimate(key_hash(0)));
    }
}

// lanes_of into a recycled sketch of the lanes' shape writes into its storage
// (no allocation) and answers as lanes_of; storage of another shape, or moved
// from, is not written into: a new sketch is made.
TEST(CountMinSketch, LanesOfReusesStorageOfTheirShapeOnly) {
    CountMinSketch four(params_of(CountMinVariant::kirsch_mitzenmacher, 97, 3, 4, false, 4));
    for (std::uint64_t key = 0; key < 500; ++key) {
        const std::uint64_t w[4] = {1, 2 + key, 3, 4 + key % 7};
        four.update(key_hash(key), w);
    }
    const CountMinSketch expected = four.lanes_of(2, 2);
    CountMinSketch recycled = four.lanes_of(0, 2);  // an older window's lanes, same shape
    const std::uint64_t* storage = recycled.counters().data();
    const CountMinSketch reused = four.lanes_of(2, 2, std::move(recycled));
    EXPECT_EQ(reused.counters().data(), storage);
    EXPECT_TRUE(std::equal(reused.counters().begin(), reused.counters().end(), expected.counters().begin(),
                           expected.counters().end()));
    EXPECT_EQ(reused.total(0), expected.total(0));
    EXPECT_EQ(reused.total(1), expected.total(1));

    CountMinSketch other_shape(params_of(CountMinVariant::kirsch_mitzenmacher, 101, 3, 4, false, 2));
    const CountMinSketch fresh = four.lanes_of(2, 2, std::move(other_shape));
    EXPECT_EQ(fresh.params(), expected.params());
    EXPECT_TRUE(std::equal(fresh.counters().begin(), fresh.counters().end(), expected.counters().begin(),
                           expected.counters().end()));

    CountMinSketch moved_from = four.lanes_of(0, 2);
    const CountMinSketch taker = std::move(moved_from);
    const CountMinSketch from_moved = four.lanes_of(2, 2, std::move(moved_from));  // NOLINT(bugprone-use-after-move)
    EXPECT_TRUE(std::equal(from_moved.counters().begin(), from_moved.counters().end(), expected.counters().begin(),
                           expected.counters().end()));
    EXPECT_EQ(taker.total(0), four.total(0));
    // copy_lanes_to refuses a moved-from sketch instead of writing past its (empty) storage.
    CountMinSketch emptied = four.lanes_of(0, 2);
    const CountMinSketch holder = std::move(emptied);
    EXPECT_THROW(four.copy_lanes_to(2, 2, emptied), std::invalid_argument);  // NOLINT(bugprone-use-after-move)
}

// clear_lanes zeroes exactly its lanes, counters and totals, and leaves the others.
TEST(CountMinSketch, ClearLanesZeroesOnlyThoseLanes) {
    CountMinSketch four(params_of(CountMinVariant::kirsch_mitzenmacher, 97, 3, 4, false, 4));
    for (std::uint64_t key = 0; key < 500; ++key) {
        const std::uint64_t w[4] = {1, 2 + key, 3, 4 + key % 7};
        four.update(key_hash(key), w);
    }
    const CountMinSketch before = four;
    four.clear_lanes(1, 2);
    for (std::uint32_t lane = 0; lane < 4; ++lane) {
        const bool cleared = lane == 1 || lane == 2;
        EXPECT_EQ(four.total(lane), cleared ? 0u : before.total(lane)) << lane;
        for (std::uint64_t key = 0; key < 500; ++key) {
            ASSERT_EQ(four.estimate(key_hash(key), lane),
                      cleared ? 0u : before.estimate(key_hash(key), lane)) << lane << " " << key;
        }
    }
}

TEST(CountMinSketch, LowerBoundIsEstimateMinusEpsilonN) {
    CountMinSketch sketch(params_of(CountMinVariant::standard, 272, 3, 1));
    for (std::uint64_t i = 0; i < 1000; ++i) sketch.update(key_hash(i % 10), 1);
    const std::uint64_t est = sketch.estimate(key_hash(0));
    const double slack = std::numbers::e / 272 * 1000;
    EXPECT_EQ(sketch.lower_bound(est),
              static_cast<std::uint64_t>(std::ceil(static_cast<double>(est) - slack)));
    EXPECT_EQ(sketch.lower_bound(1), 0u);
}

}  // namespace
}  // namespace flowsketch::core
