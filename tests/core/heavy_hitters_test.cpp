// Heavy-hitter candidates: fixed capacity, exact top set when estimates are
// exact, and an index that stays consistent through many evictions.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "core/sketch/heavy_hitters.hpp"
#include "core/sketch/random.hpp"

namespace flowsketch::core {
namespace {

FlowKey key_for(std::uint32_t i) { return FlowKey::ipv4(0x0a000000u + i, 0xc0a80001u, 1234, 80, 6); }

TEST(HeavyHitterCandidates, RejectsZeroCapacity) {
    EXPECT_THROW(HeavyHitterCandidates(0), std::invalid_argument);
}

// With exact, growing counts offered on every packet, the candidates end as
// exactly the `capacity` largest flows (all counts distinct).
TEST(HeavyHitterCandidates, KeepsTheLargestFlowsUnderChurn) {
    constexpr std::uint32_t capacity = 16;
    constexpr std::uint32_t flows = 2000;
    HeavyHitterCandidates candidates(capacity);
    std::map<std::uint32_t, std::uint64_t> counts;
    Xoshiro256 rng(42);
    // Flow i gets weight proportional to i² (distinct totals), in random order.
    std::vector<std::uint32_t> stream;
    for (std::uint32_t i = 0; i < flows; ++i) {
        for (std::uint32_t r = 0; r < 1 + (i * i) / 40000; ++r) stream.push_back(i);
    }
    for (std::size_t i = stream.size() - 1; i > 0; --i) {
        std::swap(stream[i], stream[rng.below(i + 1)]);
    }
    for (const std::uint32_t flow : stream) {
        const FlowKey key = key_for(flow);
        candidates.offer(key, hash_key(key, 1), ++counts[flow]);
    }
    ASSERT_EQ(candidates.size(), capacity);
    std::vector<std::pair<std::uint64_t, std::uint32_t>> truth;
    for (const auto& [flow, count] : counts) truth.emplace_back(count, flow);
    std::sort(truth.rbegin(), truth.rend());
    const auto entries = candidates.entries();
    // Ties at the boundary are possible; compare counts, not identities.
    std::vector<std::uint64_t> got;
    for (const auto& entry : entries) got.push_back(entry.estimate);
    std::sort(got.rbegin(), got.rend());
    for (std::uint32_t i = 0; i < capacity; ++i) EXPECT_EQ(got[i], truth[i].first) << i;
}

// Every candidate is findable again after heavy eviction traffic: offering a
// present key with a higher estimate must update it, not add a duplicate.
TEST(HeavyHitterCandidates, IndexStaysConsistentThroughEvictions) {
    HeavyHitterCandidates candidates(8);
    for (std::uint32_t round = 1; round <= 200; ++round) {
        for (std::uint32_t i = 0; i < 64; ++i) {
            const FlowKey key = key_for((i * 7919u + round) % 97);
            candidates.offer(key, hash_key(key, 3), round * 100 + i);
        }
    }
    auto entries = candidates.entries();
    ASSERT_EQ(entries.size(), 8u);
    for (auto& entry : entries) {
        candidates.offer(entry.key, hash_key(entry.key, 3), entry.estimate + 1'000'000);
    }
    const auto after = candidates.entries();
    ASSERT_EQ(after.size(), 8u);
    for (const auto& entry : after) EXPECT_GE(entry.estimate, 1'000'000u);
    for (std::size_t i = 0; i < after.size(); ++i) {
        for (std::size_t j = i + 1; j < after.size(); ++j) EXPECT_FALSE(after[i].key == after[j].key);
    }
}

// A candidate counts exactly what is offered for it from the offer that let
// it in; what it had before is bounded by the estimate it entered with. An
// evicted key starts again from zero when it comes back.
TEST(HeavyHitterCandidates, CountsTheWeightOfferedSinceEntryExactly) {
    HeavyHitterCandidates candidates(2);
    const FlowKey a = key_for(1);
    const FlowKey b = key_for(2);
    const FlowKey c = key_for(3);
    // a enters with weight 5 in an estimate of 105 (100 of other keys' weight, or its own before).
    candidates.offer(a, hash_key(a, 0), 105, 5);
    candidates.offer(b, hash_key(b, 0), 50, 50);
    candidates.offer(a, hash_key(a, 0), 112, 7);
    candidates.offer(a, hash_key(a, 0), 115, 3);
    const auto entry_of = [&](const FlowKey& key) {
        for (const auto& entry : candidates.entries()) {
            if (entry.key == key) return entry;
        }
        ADD_FAILURE() << "not a candidate";
        return HeavyHitterCandidates::Entry{};
    };
    EXPECT_EQ(entry_of(a).exact, 15u);
    EXPECT_EQ(entry_of(a).upper, 115u);  // 100 before entry + 15 since
    EXPECT_EQ(entry_of(b).exact, 50u);
    EXPECT_EQ(entry_of(b).upper, 50u);
    candidates.offer(c, hash_key(c, 0), 60, 60);  // evicts b (50)
    candidates.offer(b, hash_key(b, 0), 70, 20);  // evicts c (60), b comes back
    EXPECT_EQ(entry_of(b).exact, 20u);
    EXPECT_EQ(entry_of(b).upper, 70u);
}

TEST(HeavyHitterCandidates, ClearEmptiesAndMemoryIsFixed) {
    HeavyHitterCandidates candidates(32);
    const std::size_t memory = candidates.memory_bytes();
    for (std::uint32_t i = 0; i < 10000; ++i) candidates.offer(key_for(i), hash_key(key_for(i), 0), i);
    EXPECT_EQ(candidates.memory_bytes(), memory);
    candidates.clear();
    EXPECT_EQ(candidates.size(), 0u);
    EXPECT_TRUE(candidates.entries().empty());
}

}  // namespace
}  // namespace flowsketch::core
