// The AVX-512 kernels against the portable code they replace: the same stream
// through a structure built at each level must leave the same cells and give
// the same answers, bit for bit. Skipped where the CPU has no AVX-512 (the
// portable code is then the only one that runs).
#include "core/platform/simd.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "core/sketch/count_min.hpp"
#include "core/lifecycle/flow_lifecycle.hpp"
#include "core/sketch/random.hpp"
#include "test_keys.hpp"

namespace flowsketch::core {
namespace {

using testing::key_hash;

constexpr std::int64_t sec = 1'000'000'000;

// Restores the process-wide level after a test that changes it.
class SimdLevel : public ::testing::Test {
protected:
    void SetUp() override {
        saved_ = simd::level();
        if (simd::supported() != simd::Level::avx512) GTEST_SKIP() << "no AVX-512 on this CPU";
    }
    void TearDown() override { simd::set_level(saved_); }

private:
    simd::Level saved_ = simd::Level::portable;
};

// ctest runs the core and app tests twice, the second time with
// FLOWSKETCH_SIMD=portable: this says which code the run measured with.
TEST(Simd, LevelFollowsTheEnvironment) {
    const char* wanted = std::getenv("FLOWSKETCH_SIMD");
    if (wanted != nullptr && std::string_view(wanted) == "portable") {
        EXPECT_EQ(simd::level(), simd::Level::portable);
    } else {
        EXPECT_EQ(simd::level(), simd::supported());
    }
}

TEST(Simd, PortableCanAlwaysBeChosenAndSupportCapsTheRest) {
    const simd::Level saved = simd::level();
    EXPECT_EQ(simd::set_level(simd::Level::portable), simd::Level::portable);
    EXPECT_EQ(simd::level(), simd::Level::portable);
    EXPECT_EQ(simd::set_level(simd::Level::avx512), simd::supported());
    EXPECT_EQ(simd::level(), simd::supported());
    EXPECT_EQ(simd::level_name(simd::Level::portable), "portable");
    EXPECT_EQ(simd::level_name(simd::Level::avx512), "avx512");
    simd::set_level(saved);
}

void expect_same_counts(const FlowCounts& a, const FlowCounts& b) {
    EXPECT_EQ(a.packets, b.packets);
    EXPECT_EQ(a.new_flows, b.new_flows);
    EXPECT_EQ(a.new_undercount_expected, b.new_undercount_expected);
    EXPECT_EQ(a.new_undercount_bound, b.new_undercount_bound);
    EXPECT_EQ(a.active, b.active);
    EXPECT_EQ(a.active_stderr, b.active_stderr);
    EXPECT_EQ(a.expired, b.expired);
    EXPECT_EQ(a.expired_stderr, b.expired_stderr);
    EXPECT_EQ(a.ended, b.ended);
    EXPECT_EQ(a.fill, b.fill);
    EXPECT_EQ(a.fpr, b.fpr);
    EXPECT_EQ(a.max_fpr, b.max_fpr);
    EXPECT_EQ(a.generations_advanced, b.generations_advanced);
}

// A small blocked filter (so blocks fill up and cells of every age meet the
// probes), driven past its design load with repeats, ends and generation
// turns: every branch of the refresh (current, covered, new, partly new).
TEST_F(SimdLevel, BlockedLifecycleGivesTheSameAnswersWithEitherLevel) {
    FlowLifecycleConfig config;
    config.max_flows = 2'000;
    config.target_fpr = 0.001;
    config.idle_timeout_ns = 8 * sec;
    config.generations = 4;
    config.kind = SeenFilterKind::blocked;
    config.recent_flow_table = false;  // every packet reaches the block refresh

    simd::set_level(simd::Level::portable);
    FlowLifecycle portable(config);
    simd::set_level(simd::Level::avx512);
    FlowLifecycle vector(config);

    SplitMix64 rng(42);
    std::int64_t now = 0;
    std::uint64_t new_portable = 0;
    for (int interval = 0; interval < 6; ++interval) {
        for (int i = 0; i < 20'000; ++i) {
            now += 1'000'000;  // 1 ms: 20 s an interval, ten generations of 2 s
            // A quarter of the packets from 6,000 flows (three times the
            // design load), the rest from 300 busy ones: some flows come back
            // within a generation, some only after they expired.
            const std::uint64_t r = rng.next();
            const std::uint64_t flow = r % 4 == 0 ? (r >> 8) % 6'000 : (r >> 40) % 300;
            const std::uint8_t flags = (r >> 20) % 50 == 0 ? tcp_fin : 0;
            const bool a = portable.observe(key_hash(flow), now, flags);
            const bool b = vector.observe(key_hash(flow), now, flags);
            ASSERT_EQ(a, b) << "packet " << i << " of interval " << interval;
            new_portable += a ? 1 : 0;
        }
        expect_same_counts(portable.interval_counts(), vector.interval_counts());
        portable.start_new_interval();
        vector.start_new_interval();
    }
    EXPECT_GT(new_portable, 6'000u) << "flows must expire and come back new";
    for (std::uint64_t flow = 0; flow < 20'000; ++flow) {
        ASSERT_EQ(portable.contains(key_hash(flow, 1)), vector.contains(key_hash(flow, 1)));
        ASSERT_EQ(portable.contains(key_hash(flow)), vector.contains(key_hash(flow)));
    }
}

TEST_F(SimdLevel, BlockKernelWritesOnlyTheProbedCells) {
    alignas(64) std::uint64_t block[8];
    alignas(64) std::uint64_t expected[8];
    SplitMix64 rng(7);
    for (int trial = 0; trial < 20'000; ++trial) {
        for (auto& word : block) word = rng.next() & (trial % 3 == 0 ? 0x3333333333333333ULL : ~0ULL);
        const std::uint32_t stamp = 1 + static_cast<std::uint32_t>(rng.next() % 15);
        std::uint64_t even = 0;
        std::uint64_t odd = 0;
        const std::uint32_t probes = 1 + static_cast<std::uint32_t>(rng.next() % 20);
        for (std::uint32_t p = 0; p < probes; ++p) {
            const std::uint32_t cell = static_cast<std::uint32_t>(rng.next() % 128);
            ((cell & 1) != 0 ? odd : even) |= std::uint64_t{1} << (cell >> 1);
        }
        // The reference, cell by cell.
        bool stale = false;
        std::uint32_t fresh = 0;
        for (int w = 0; w < 8; ++w) expected[w] = block[w];
        for (std::uint32_t cell = 0; cell < 128; ++cell) {
            if ((((cell & 1) != 0 ? odd : even) >> (cell >> 1) & 1) == 0) continue;
            const std::uint32_t shift = (cell & 15) * 4;
            const auto value = static_cast<std::uint32_t>(expected[cell >> 4] >> shift) & 15u;
            stale = stale || value != stamp;
            fresh += value == 0 ? 1u : 0u;
            expected[cell >> 4] = (expected[cell >> 4] & ~(std::uint64_t{15} << shift)) |
                                  (std::uint64_t{stamp} << shift);
        }
        const simd::BlockRefresh r = simd::refresh_block_avx512(block, even, odd, stamp);
        ASSERT_EQ(r.current, !stale) << "trial " << trial;
        if (stale) {
            ASSERT_EQ(r.fresh, fresh) << "trial " << trial;
        }
        for (int w = 0; w < 8; ++w) ASSERT_EQ(block[w], expected[w]) << "trial " << trial << " word " << w;
    }
}

// The offsets kernel builds the probe sets itself: the same cells, result and
// block as the masks kernel given the sets of the first k 7-bit offsets.
TEST_F(SimdLevel, BlockKernelFromOffsetsMatchesTheMasksKernel) {
    alignas(64) std::uint64_t by_offsets[8];
    alignas(64) std::uint64_t by_masks[8];
    SplitMix64 rng(11);
    for (int trial = 0; trial < 20'000; ++trial) {
        for (int w = 0; w < 8; ++w) {
            by_offsets[w] = rng.next() & (trial % 3 == 0 ? 0x3333333333333333ULL : ~0ULL);
            by_masks[w] = by_offsets[w];
        }
        const std::uint32_t stamp = 1 + static_cast<std::uint32_t>(rng.next() % 15);
        const std::uint64_t offsets = rng.next();
        const std::uint32_t k = 1 + static_cast<std::uint32_t>(trial % 8);
        std::uint64_t even = 0;
        std::uint64_t odd = 0;
        for (std::uint32_t i = 0; i < k; ++i) {
            const auto cell = static_cast<std::uint32_t>(offsets >> (7 * i) & 127);
            ((cell & 1) != 0 ? odd : even) |= std::uint64_t{1} << (cell >> 1);
        }
        const simd::BlockRefresh expected = simd::refresh_block_avx512(by_masks, even, odd, stamp);
        const simd::BlockRefresh r = simd::refresh_block_offsets_avx512(by_offsets, offsets, k, stamp);
        ASSERT_EQ(r.current, expected.current) << "trial " << trial;
        ASSERT_EQ(r.fresh, expected.fresh) << "trial " << trial;
        for (int w = 0; w < 8; ++w) ASSERT_EQ(by_offsets[w], by_masks[w]) << "trial " << trial << " word " << w;
    }
}

// The columns kernel's two remainder paths (double precision for widths up to
// 2^20, 64-bit reciprocals above) against the exact g_j = (h1 + j·h2) mod w,
// at the edges of both paths' widths and with extreme hashes.
TEST_F(SimdLevel, ColumnsKernelGivesExactRemaindersAtEveryWidth) {
    SplitMix64 rng(5);
    std::vector<Hash128> hashes;
    const std::uint64_t extremes[] = {0, 1, 15, 16, 0xffffffffULL, 0x100000000ULL, 1ULL << 52,
                                      (1ULL << 53) - 1, 1ULL << 63, ~0ULL, ~0ULL - 1};
    for (const std::uint64_t a : extremes) {
        for (const std::uint64_t b : extremes) hashes.push_back(Hash128{a, b});
    }
    while (hashes.size() % 8 != 0 || hashes.size() < 4096) hashes.push_back(Hash128{rng.next(), rng.next()});
    for (const std::uint64_t width : {2ULL, 15ULL, 16ULL, 17ULL, 97ULL, 11'299ULL, 65'536ULL, 1'048'573ULL,
                                      1ULL << 20, (1ULL << 20) + 7, 268'435'399ULL}) {
        for (std::size_t i = 0; i < hashes.size(); ++i) {
            // Multiples of the width, and their neighbours, where a remainder turns over.
            if (i % 97 == 0) hashes[i].h1 = (rng.next() / width) * width + i % 3 - 1;
        }
        std::vector<std::uint32_t> out(hashes.size() * 4);
        simd::count_min_columns4_avx512(reinterpret_cast<const std::byte*>(hashes.data()), sizeof(Hash128),
                                        hashes.size(), width, ~0ULL / width, out.data());
        for (std::size_t i = 0; i < hashes.size(); ++i) {
            const std::uint64_t step = hashes[i].h2 % width;
            std::uint64_t g = hashes[i].h1 % width;
            for (std::size_t row = 0; row < 4; ++row) {
                ASSERT_EQ(out[i * 4 + row], g) << "width " << width << " hash " << i << " row " << row;
                g = (g + step) % width;
            }
        }
    }
}

TEST_F(SimdLevel, FourLaneCountMinGivesTheSameCellsAndEstimatesWithEitherLevel) {
    CountMinParams params = CountMinParams::for_error(0.001, 0.001, CountMinVariant::kirsch_mitzenmacher);
    params.lanes = 4;
    simd::set_level(simd::Level::portable);
    CountMinSketch portable(params);
    simd::set_level(simd::Level::avx512);
    CountMinSketch vector(params);
    SplitMix64 rng(3);
    for (int i = 0; i < 200'000; ++i) {
        const Hash128 hash = key_hash(rng.next() % 50'000);
        // Weights up to 2^40: sums well past 32 bits, so every lane's carry matters.
        const std::uint64_t weights[4] = {1 + rng.next() % 3, rng.next() >> 24, 1,
                                          rng.next() % 1'500};
        std::uint64_t a[4];
        std::uint64_t b[4];
        portable.update_and_estimate(hash, weights, a);
        vector.update_and_estimate(hash, weights, b);
        for (int lane = 0; lane < 4; ++lane) ASSERT_EQ(a[lane], b[lane]) << "update " << i;
    }
    ASSERT_EQ(portable.counters().size(), vector.counters().size());
    EXPECT_TRUE(std::equal(portable.counters().begin(), portable.counters().end(),
                           vector.counters().begin()));
    EXPECT_TRUE(std::equal(portable.totals().begin(), portable.totals().end(),
                           vector.totals().begin()));
}

// The batched columns against columns(), hash by hash: eight at a time in
// the vector sketch (KM, depth 4), the scalar loop otherwise; widths small
// and about 2^20, hashes at the ends of the 64-bit range.
TEST_F(SimdLevel, ColumnsOfManyHashesAreEachHashsColumns) {
    SplitMix64 rng(5);
    std::vector<Hash128> hashes(10'007);
    for (std::size_t i = 0; i < hashes.size(); ++i) {
        switch (i % 5) {
            case 0: hashes[i] = Hash128{~std::uint64_t{0} - (rng.next() % 4), rng.next()}; break;
            case 1: hashes[i] = Hash128{rng.next() % 4, ~std::uint64_t{0} - (rng.next() % 4)}; break;
            default: hashes[i] = Hash128{rng.next(), rng.next()}; break;
        }
    }
    for (const std::uint32_t width : {2u, 11'299u, 65'537u, 1'000'003u}) {
        for (const std::uint32_t depth : {4u, 3u}) {
            CountMinParams params;
            params.width = width;
            params.depth = depth;
            params.lanes = 1;
            simd::set_level(simd::Level::avx512);
            const CountMinSketch sketch(params);
            std::vector<std::uint32_t> batched(hashes.size() * depth);
            sketch.columns_of(reinterpret_cast<const std::byte*>(hashes.data()), sizeof(Hash128),
                              hashes.size(), batched.data());
            for (std::size_t i = 0; i < hashes.size(); ++i) {
                std::uint32_t one[max_count_min_depth];
                sketch.columns(hashes[i], one);
                for (std::uint32_t row = 0; row < depth; ++row) {
                    ASSERT_EQ(batched[i * depth + row], one[row])
                        << "hash " << i << " row " << row << " width " << width;
                    ASSERT_EQ(one[row], sketch.column(hashes[i], row));
                }
            }
        }
    }
}

}  // namespace
}  // namespace flowsketch::core
