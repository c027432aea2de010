// AggregationCache: sums per flow, hands back what it displaces, never loses a packet.
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <vector>

#include "core/measure/aggregation_cache.hpp"

namespace flowsketch::core {
namespace {

FlowKey key_for(std::uint32_t i) { return FlowKey::ipv4(0x0a000000u + i, 0xc0a80001u, 4000, 443, 17); }
Hash128 hash_for(std::uint32_t i) { return hash_key(key_for(i), 1); }

TEST(AggregationCache, RejectsSlotCountsThatAreNotPowersOfTwo) {
    EXPECT_THROW(AggregationCache(3), std::invalid_argument);
    EXPECT_THROW(AggregationCache(1000), std::invalid_argument);
    EXPECT_THROW(AggregationCache((std::uint32_t{1} << 24) * 2), std::invalid_argument);
    EXPECT_NO_THROW(AggregationCache(0));
    EXPECT_NO_THROW(AggregationCache(1));
    EXPECT_NO_THROW(AggregationCache(1024));
}

using Added = AggregationCache::Added;

TEST(AggregationCache, SumsPacketsOfOneFlowUntilDrained) {
    AggregationCache cache(64);
    AggregationCache::Entry evicted;
    EXPECT_EQ(cache.add(key_for(1), hash_for(1), 100, evicted), Added::inserted);
    for (std::uint32_t i = 1; i < 10; ++i) {
        EXPECT_EQ(cache.add(key_for(1), hash_for(1), 100 + i, evicted), Added::summed);
    }
    std::vector<AggregationCache::Entry> drained;
    cache.drain([&](const AggregationCache::Entry& e) { drained.push_back(e); });
    ASSERT_EQ(drained.size(), 1u);
    EXPECT_EQ(drained[0].key, key_for(1));
    EXPECT_EQ(drained[0].hash, hash_for(1));
    EXPECT_EQ(drained[0].packets, 10u);
    EXPECT_EQ(drained[0].bytes, 1045u);
    std::size_t again = 0;
    cache.drain([&](const AggregationCache::Entry&) { ++again; });
    EXPECT_EQ(again, 0u) << "drain empties the cache";
}

TEST(AggregationCache, DisplacedFlowComesBackWhole) {
    AggregationCache cache(1);  // every flow shares the one slot
    AggregationCache::Entry evicted;
    EXPECT_EQ(cache.add(key_for(1), hash_for(1), 60, evicted), Added::inserted);
    EXPECT_EQ(cache.add(key_for(1), hash_for(1), 40, evicted), Added::summed);
    ASSERT_EQ(cache.add(key_for(2), hash_for(2), 1500, evicted), Added::displaced);
    EXPECT_EQ(evicted.key, key_for(1));
    EXPECT_EQ(evicted.packets, 2u);
    EXPECT_EQ(evicted.bytes, 100u);
}

TEST(AggregationCache, WithoutSlotsEveryPacketPassesThrough) {
    AggregationCache cache(0);
    AggregationCache::Entry evicted;
    ASSERT_EQ(cache.add(key_for(7), hash_for(7), 1234, evicted), Added::displaced);
    EXPECT_EQ(evicted.key, key_for(7));
    EXPECT_EQ(evicted.packets, 1u);
    EXPECT_EQ(evicted.bytes, 1234u);
    EXPECT_EQ(cache.memory_bytes(), 0u);
}

// A flow's byte sum must not wrap: near 2^32 the entry leaves whole first.
TEST(AggregationCache, SumsThatWouldOverflowAreHandedBackFirst) {
    AggregationCache cache(8);
    AggregationCache::Entry evicted;
    const std::uint32_t big = std::numeric_limits<std::uint32_t>::max() / 2;
    EXPECT_EQ(cache.add(key_for(3), hash_for(3), big, evicted), Added::inserted);
    EXPECT_EQ(cache.add(key_for(3), hash_for(3), big, evicted), Added::summed);
    // The flow starts a new entry: not "summed", so the lifecycle sees this packet.
    ASSERT_EQ(cache.add(key_for(3), hash_for(3), 2, evicted), Added::displaced);
    EXPECT_EQ(evicted.packets, 2u);
    EXPECT_EQ(evicted.bytes, 2u * big);
    std::vector<AggregationCache::Entry> drained;
    cache.drain([&](const AggregationCache::Entry& e) { drained.push_back(e); });
    ASSERT_EQ(drained.size(), 1u);
    EXPECT_EQ(drained[0].packets, 1u);
    EXPECT_EQ(drained[0].bytes, 2u);
}

// Conservation: over a random stream, what was displaced plus what is drained
// is exactly every flow's packets and bytes.
TEST(AggregationCache, DisplacedPlusDrainedIsEveryPacket) {
    for (const std::uint32_t slots : {0u, 1u, 16u, 4096u}) {
        AggregationCache cache(slots);
        std::mt19937_64 rng(slots);
        std::map<std::uint32_t, std::pair<std::uint64_t, std::uint64_t>> truth, seen;
        auto record = [&](const AggregationCache::Entry& e) {
            const std::uint32_t flow = e.key.src[3] | (std::uint32_t{e.key.src[2]} << 8);
            seen[flow].first += e.packets;
            seen[flow].second += e.bytes;
        };
        AggregationCache::Entry evicted;
        for (int i = 0; i < 100000; ++i) {
            const auto flow = static_cast<std::uint32_t>(rng() % 3000);
            const auto bytes = static_cast<std::uint32_t>(40 + rng() % 1500);
            truth[flow].first += 1;
            truth[flow].second += bytes;
            if (cache.add(key_for(flow), hash_for(flow), bytes, evicted) == Added::displaced) {
                record(evicted);
            }
        }
        cache.drain(record);
        EXPECT_EQ(seen, truth) << slots << " slots";
    }
}

}  // namespace
}  // namespace flowsketch::core
