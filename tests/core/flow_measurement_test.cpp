// FlowMeasurement: the per-packet path and what its summaries promise.
#include <gtest/gtest.h>

#include "core/flow_measurement.hpp"

namespace flowsketch::core {
namespace {

FlowKey key_for(std::uint32_t i) { return FlowKey::ipv4(0x0a000000u + i, 0xc0a80001u, 4000, 443, 6); }

MeasurementConfig small_config(std::uint32_t width, std::uint32_t depth) {
    MeasurementConfig config;
    config.sketch.variant = CountMinVariant::kirsch_mitzenmacher;
    config.sketch.width = width;
    config.sketch.depth = depth;
    config.top_k = 5;
    config.track_flows = false;
    return config;
}

// A light flow that shares every sketch cell with a heavy one gets the heavy
// one's estimate; selection would make it a phantom heavy hitter with a false
// lower bound. Both must be flagged and their lower bounds dropped to 0.
TEST(FlowMeasurement, FlowsSharingEveryCellAreFlaggedWithLowerBoundZero) {
    const MeasurementConfig config = small_config(11, 3);
    FlowMeasurement measurement(config);
    CountMinSketch probe(measurement.sketch_params());
    const auto columns = [&](const FlowKey& key) {
        const Hash128 h = hash_key(key, config.hash_seed);
        return std::vector<std::uint32_t>{probe.column(h, 0), probe.column(h, 1), probe.column(h, 2)};
    };
    // With w = 11 a pair sharing all cells turns up within a few hundred keys.
    const FlowKey heavy = key_for(0);
    FlowKey twin = heavy;
    for (std::uint32_t i = 1; i < 100000; ++i) {
        if (columns(key_for(i)) == columns(heavy)) {
            twin = key_for(i);
            break;
        }
    }
    ASSERT_FALSE(twin == heavy) << "no twin found";
    for (int i = 0; i < 1000; ++i) measurement.add(PacketRecord{heavy, i, 100, 0});
    measurement.add(PacketRecord{twin, 1000, 100, 0});
    const WindowSummary summary = measurement.total_summary();
    ASSERT_GE(summary.top_packets.size(), 2u);
    for (int i = 0; i < 2; ++i) {
        const HeavyHitter& h = summary.top_packets[static_cast<std::size_t>(i)];
        EXPECT_TRUE(h.key == heavy || h.key == twin);
        EXPECT_TRUE(h.shares_cells);
        EXPECT_EQ(h.lower, 0u);
        EXPECT_EQ(h.estimate, 1001u);  // the pair's sum: an upper bound for each
    }
}

TEST(FlowMeasurement, DistinctCellsKeepTheirLowerBound) {
    FlowMeasurement measurement(small_config(1009, 4));
    for (int i = 0; i < 500; ++i) measurement.add(PacketRecord{key_for(1), i, 60, 0});
    for (int i = 0; i < 100; ++i) measurement.add(PacketRecord{key_for(2), i, 60, 0});
    const WindowSummary summary = measurement.total_summary();
    ASSERT_EQ(summary.top_packets.size(), 2u);
    EXPECT_FALSE(summary.top_packets[0].shares_cells);
    EXPECT_EQ(summary.top_packets[0].estimate, 500u);
    EXPECT_GT(summary.top_packets[0].lower, 0u);
    EXPECT_LE(summary.top_packets[0].lower, 500u);
}

// Memory is fixed by configuration: a million distinct flows change nothing.
TEST(FlowMeasurement, MemoryDoesNotGrowWithFlows) {
    MeasurementConfig config;
    config.sketch = CountMinParams::for_error(0.001, 0.001, CountMinVariant::kirsch_mitzenmacher);
    config.lifecycle.max_flows = 100'000;
    FlowMeasurement measurement(config);
    const std::size_t before = measurement.memory_bytes();
    std::vector<PacketRecord> batch;
    for (std::uint32_t i = 0; i < 1'000'000; ++i) {
        batch.push_back(PacketRecord{key_for(i), std::int64_t{i} * 1000, 64, 0x02});
        if (batch.size() == 256) {
            measurement.add_batch(batch);
            batch.clear();
        }
    }
    EXPECT_EQ(measurement.memory_bytes(), before);
    const WindowSummary summary = measurement.total_summary();
    EXPECT_EQ(summary.packets, 1'000'000u - 1'000'000u % 256);
    EXPECT_TRUE(summary.flows.overfilled);
}

}  // namespace
}  // namespace flowsketch::core
