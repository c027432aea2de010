// Ranking candidates: a key whose cells it shares with a heavy candidate must
// not take the heavy count as its own when the candidates' exact counts show
// whose it is; without those counts (values of older versions) the ranking is
// the Count-Min estimate's, as it always was.
#include "core/measure/top_list.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/sketch/heavy_hitters.hpp"

namespace flowsketch::core {
namespace {

constexpr std::uint64_t seed = 17;

FlowKey key_for(std::uint32_t i) { return FlowKey::ipv4(0x0a000000u + i, 0xc6336450u, 1024, 80, 6); }

std::vector<std::uint32_t> columns_of(const CountMinSketch& sketch, const FlowKey& key) {
    const Hash128 hash = hash_key(key, seed);
    std::vector<std::uint32_t> columns;
    for (std::uint32_t row = 0; row < sketch.params().depth; ++row) columns.push_back(sketch.column(hash, row));
    return columns;
}

// A heavy key, a key with every cell of the heavy one's, and a mid-sized key
// with cells of its own, measured as the aggregation does: each update goes
// into the sketch and is offered, with its weight, to the candidates.
struct SharedCells {
    CountMinSketch sketch;
    HeavyHitterCandidates candidates{8};
    FlowKey heavy, twin, middle;

    SharedCells() : sketch(CountMinParams{CountMinVariant::kirsch_mitzenmacher, 13, 3, 1, 5, false, 0}) {
        heavy = key_for(0);
        const std::vector<std::uint32_t> heavy_columns = columns_of(sketch, heavy);
        std::optional<FlowKey> found_twin, found_middle;
        for (std::uint32_t i = 1; i < 100000 && !(found_twin && found_middle); ++i) {
            const std::vector<std::uint32_t> columns = columns_of(sketch, key_for(i));
            if (columns == heavy_columns) found_twin = key_for(i);
            bool apart = true;
            for (std::size_t row = 0; row < columns.size(); ++row) apart = apart && columns[row] != heavy_columns[row];
            if (apart && !found_middle) found_middle = key_for(i);
        }
        twin = found_twin.value();
        middle = found_middle.value();
    }

    void add(const FlowKey& key, std::uint64_t weight) {
        const Hash128 hash = hash_key(key, seed);
        const std::array<std::uint64_t, 1> weights{weight};
        std::array<std::uint64_t, 1> estimate{};
        sketch.update_and_estimate(hash, weights, estimate);
        candidates.offer(key, hash, estimate[0], weight);
    }

    TopList rank(bool with_counts) const {
        std::vector<FlowKey> keys;
        std::vector<CandidateCount> counts;
        for (const auto& entry : candidates.entries()) {
            keys.push_back(entry.key);
            counts.push_back(CandidateCount{entry.exact, entry.upper});
        }
        return rank_keys(sketch, 0, keys, KeySpec::five_tuple(), Weight::bytes, 2, seed,
                         with_counts ? std::span<const CandidateCount>(counts) : std::span<const CandidateCount>());
    }
};

TEST(RankKeys, AKeyInAHeavyKeysCellsDoesNotOutrankTheNextHeavyKey) {
    SharedCells s;
    for (int i = 0; i < 100; ++i) s.add(s.heavy, 1500);
    for (int i = 0; i < 50; ++i) s.add(s.middle, 1500);
    s.add(s.twin, 60);  // one packet, late: it enters with the heavy key's count
    const TopList list = s.rank(true);
    ASSERT_EQ(list.size(), 2u);
    EXPECT_EQ(list[0].key, s.heavy);
    EXPECT_EQ(list[0].estimate, 150'000u);  // the cells less the twin's exact 60
    EXPECT_TRUE(list[0].shares_cells);
    EXPECT_EQ(list[0].lower, 150'000u);  // its exact count since it entered
    EXPECT_EQ(list[1].key, s.middle);
    EXPECT_EQ(list[1].estimate, 75'000u);
    EXPECT_FALSE(list[1].shares_cells);
}

TEST(RankKeys, WithoutExactCountsTheSharedEstimateRanksAsBefore) {
    SharedCells s;
    for (int i = 0; i < 100; ++i) s.add(s.heavy, 1500);
    for (int i = 0; i < 50; ++i) s.add(s.middle, 1500);
    s.add(s.twin, 60);
    const TopList list = s.rank(false);
    ASSERT_EQ(list.size(), 2u);
    // Both twins carry the sum: the middle key is pushed out, and the lower bounds are 0.
    for (const HeavyHitter& row : list) {
        EXPECT_TRUE(row.key == s.heavy || row.key == s.twin);
        EXPECT_EQ(row.estimate, 150'060u);
        EXPECT_EQ(row.lower, 0u);
    }
}

TEST(RankKeys, TheTwinsEstimateIsItsCellsLessTheHeavyKeysExactCount) {
    SharedCells s;
    for (int i = 0; i < 100; ++i) s.add(s.heavy, 1500);
    s.add(s.twin, 60);
    std::vector<FlowKey> keys;
    std::vector<CandidateCount> counts;
    for (const auto& entry : s.candidates.entries()) {
        keys.push_back(entry.key);
        counts.push_back(CandidateCount{entry.exact, entry.upper});
    }
    const TopList list = rank_keys(s.sketch, 0, keys, KeySpec::five_tuple(), Weight::bytes, 8, seed, counts);
    ASSERT_EQ(list.size(), 2u);
    EXPECT_EQ(list[1].key, s.twin);
    EXPECT_EQ(list[1].estimate, 60u);  // never below the truth, and here equal to it
    EXPECT_EQ(list[1].lower, 60u);
}

// Under the conservative update a cell may hold less than the sum of its keys'
// counts: the exact counts of others are not subtracted, only the bound a key
// entered with applies.
TEST(RankKeys, ConservativeUpdateKeepsTheCellsWhole) {
    CountMinSketch sketch(CountMinParams{CountMinVariant::kirsch_mitzenmacher, 13, 3, 1, 5, true, 0});
    const FlowKey a = key_for(1);
    const Hash128 hash = hash_key(a, seed);
    sketch.update(hash, 40);
    const std::array<FlowKey, 1> keys{a};
    const std::array<CandidateCount, 1> counts{CandidateCount{40, 40}};
    const TopList list = rank_keys(sketch, 0, keys, KeySpec::five_tuple(), Weight::packets, 1, seed, counts);
    ASSERT_EQ(list.size(), 1u);
    EXPECT_EQ(list[0].estimate, 40u);
    EXPECT_EQ(list[0].lower, 40u);
}

}  // namespace
}  // namespace flowsketch::core
