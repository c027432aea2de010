// MeasurementWorker: the `--threads 2` hand-over. Whoever hashes a batch (the
// submitter, or the worker when the submitter left it unhashed), the
// measurement must end up exactly as one thread makes it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <random>
#include <utility>

#include "src/measurement_worker.hpp"
#include "tests/support/measurement_support.hpp"

namespace flowsketch::app {
namespace {

using core::FlowMeasurement;

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

TEST(MeasurementWorker, HashedAndUnhashedBatchesMeasureAsOneThread) {
    const auto packets = flowsketch::testing::skewed_stream(150'000, 3000, 5);
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
            // Both kinds (pairs of hashed batches between unhashed ones), as the
            // pipeline's choice may fall.
            batch.hashed = (batch_index / 3 + batch_index) % 2 == 0;
            if (batch.hashed) two.prepare(batch.packets, batch.prepared);
            worker.submit(std::move(batch));
            at += n;
        }
        worker.drain();
        EXPECT_FALSE(worker.behind()) << "drained";
    }
    const core::WindowSummary a = one.total_summary();
    flowsketch::testing::expect_same_window(a, two.total_summary());
    EXPECT_GT(a.flows.expired, 0.0) << "generations turned";
    EXPECT_GT(a.flows.ended, 0u);
    ASSERT_FALSE(a.top_packets.empty());
    EXPECT_GT(a.top_packets.front().estimate, 1000u) << "a heavy head";
}

}  // namespace
}  // namespace flowsketch::app
