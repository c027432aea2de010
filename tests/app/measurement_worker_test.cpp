// MeasurementWorker: the `--threads 2` hand-over. Whoever hashes a batch (the
// submitter, or the worker when the submitter left it unhashed), the
// measurement must end up exactly as one thread makes it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "src/measurement_worker.hpp"

namespace flowsketch::app {
namespace {

using core::FlowMeasurement;
using core::PacketRecord;

// Zipf-like traffic over `flows` flows, 1 µs apart, with FIN on some packets:
// heavy hitters, displaced cache entries, lifecycle generations and ends.
std::vector<PacketRecord> stream(std::size_t packets, std::uint32_t flows, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<PacketRecord> out;
    out.reserve(packets);
    for (std::size_t i = 0; i < packets; ++i) {
        const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
        const auto flow = static_cast<std::uint32_t>(std::pow(static_cast<double>(flows), u)) - 1;
        const core::FlowKey key =
            core::FlowKey::ipv4(0x0a000000u + flow, 0xc0a80001u, 4000, 443, 6);
        const std::uint8_t flags = rng() % 50 == 0 ? 0x11 : 0x10;
        out.push_back(PacketRecord{key, static_cast<std::int64_t>(i) * 1000,
                                   static_cast<std::uint32_t>(64 + rng() % 1400), flags});
    }
    return out;
}

core::MeasurementConfig config() {
    core::MeasurementConfig c;
    c.sketch.width = 509;
    c.sketch.depth = 4;
    c.top_k = 8;
    c.candidates = 8;  // smaller than the flows: the order of offers matters
    c.aggregation_slots = 256;
    c.lifecycle.max_flows = 20'000;
    c.lifecycle.idle_timeout_ns = 20'000'000;  // 20 ms: the 150 ms stream turns generations
    return c;
}

void expect_same(const core::WindowSummary& a, const core::WindowSummary& b) {
    EXPECT_EQ(a.packets, b.packets);
    EXPECT_EQ(a.bytes, b.bytes);
    for (const auto& [x, y] : {std::pair{&a.top_packets, &b.top_packets},
                               std::pair{&a.top_bytes, &b.top_bytes}}) {
        ASSERT_EQ(x->size(), y->size());
        for (std::size_t i = 0; i < x->size(); ++i) {
            EXPECT_EQ((*x)[i].key, (*y)[i].key) << i;
            EXPECT_EQ((*x)[i].estimate, (*y)[i].estimate) << i;
            EXPECT_EQ((*x)[i].lower, (*y)[i].lower) << i;
        }
    }
    EXPECT_EQ(a.flows.new_flows, b.flows.new_flows);
    EXPECT_EQ(a.flows.ended, b.flows.ended);
    EXPECT_EQ(a.flows.active, b.flows.active);
    EXPECT_EQ(a.flows.expired, b.flows.expired);
}

TEST(MeasurementWorker, HashedAndUnhashedBatchesMeasureAsOneThread) {
    const auto packets = stream(150'000, 30'000, 5);
    FlowMeasurement one(config());
    FlowMeasurement two(config());
    one.add_batch(packets);
    {
        MeasurementWorker worker(two);
        EXPECT_FALSE(worker.behind()) << "nothing queued yet";
        std::mt19937_64 rng(6);
        std::size_t at = 0;
        for (std::size_t batch_index = 0; at < packets.size(); ++batch_index) {
            const std::size_t n = std::min<std::size_t>(packets.size() - at, 1 + rng() % 3000);
            MeasurementWorker::Batch batch = worker.take_spare();
            batch.packets.assign(packets.begin() + static_cast<std::ptrdiff_t>(at),
                                 packets.begin() + static_cast<std::ptrdiff_t>(at + n));
            // Both kinds, in runs and alternating, as the pipeline's choice may fall.
            batch.hashed = (batch_index / 3 + batch_index) % 2 == 0;
            if (batch.hashed) two.prepare(batch.packets, batch.prepared);
            worker.submit(std::move(batch));
            at += n;
        }
        worker.drain();
        EXPECT_FALSE(worker.behind()) << "drained";
    }
    const core::WindowSummary a = one.total_summary();
    expect_same(a, two.total_summary());
    EXPECT_GT(a.flows.expired, 0.0) << "generations turned";
    EXPECT_GT(a.flows.ended, 0u);
    ASSERT_FALSE(a.top_packets.empty());
    EXPECT_GT(a.top_packets.front().estimate, 1000u) << "a heavy head";
}

}  // namespace
}  // namespace flowsketch::app
