// MeasurementWorker: the `--threads 2` hand-over. Whoever hashes a batch (the
// submitter, or the worker when the submitter left it unhashed), the
// measurement must end up exactly as one thread makes it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "src/measurement_worker.hpp"
#include "tests/support/capture_builder.hpp"
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
    const core::WindowSummary a = one.summary(core::Window::run);
    flowsketch::testing::expect_same_window(a, two.summary(core::Window::run));
    EXPECT_GT(a.flows.expired, 0.0) << "generations turned";
    EXPECT_GT(a.flows.ended, 0u);
    ASSERT_FALSE(a.top_packets.empty());
    EXPECT_GT(a.top_packets.front().estimate, 1000u) << "a heavy head";
}

// Frames handed over undecoded: the worker decodes them (counting the ones it
// skips, by reason) and the measurement is again that of one thread.
TEST(MeasurementWorker, FramesItDecodesMeasureAsOneThread) {
    namespace build = flowsketch::testing;
    const auto stream = build::skewed_stream(60'000, 2000, 9);
    // The stream as Ethernet frames, with a malformed frame after every 40th.
    auto arena = std::make_shared<std::vector<std::uint8_t>>();
    std::vector<std::pair<std::size_t, std::size_t>> spans;  // offset, length in the arena
    std::vector<std::int64_t> times;
    std::vector<std::uint32_t> wire;
    for (std::size_t i = 0; i < stream.size(); ++i) {
        const core::PacketRecord& p = stream[i];
        build::Ipv4Fields ip;  // the addresses of the record's key (flow_key), in network order
        ip.src = 0;
        for (std::size_t b = 0; b < 4; ++b) ip.src = ip.src << 8 | std::uint32_t{p.key.src[b]};
        ip.dst = 0xc0a80001u;
        std::vector<build::Bytes> frames{
            build::ethernet(build::ethertype_ipv4, build::ipv4(6, build::tcp(4000, 443, 5, p.tcp_flags), ip))};
        if (i % 40 == 39) {
            frames.push_back(i % 80 == 39 ? build::truncated(frames[0], 20)  // inside the IPv4 header
                                          : build::ethernet(build::ethertype_arp, build::Bytes(28, 0)));
        }
        for (const build::Bytes& f : frames) {
            spans.emplace_back(arena->size(), f.size());
            arena->insert(arena->end(), f.begin(), f.end());
            times.push_back(p.timestamp_ns);
            wire.push_back(p.wire_length);
        }
    }
    std::vector<capture::Frame> frames;
    for (std::size_t i = 0; i < spans.size(); ++i) {
        frames.push_back(capture::Frame{times[i], static_cast<std::uint32_t>(spans[i].second), wire[i],
                                        arena->data() + spans[i].first});
    }

    FlowMeasurement one(config());
    FlowMeasurement two(config());
    {
        std::vector<core::PacketRecord> records;
        for (const capture::Frame& f : frames) decode_into(records, capture::link_type::ethernet, f, {});
        ASSERT_EQ(records.size(), stream.size()) << "the malformed frames are skipped";
        for (std::size_t i = 0; i < records.size(); ++i) ASSERT_EQ(records[i].key, stream[i].key) << i;
        one.add_batch(records);
    }
    SkipCounts expected{};
    SkipCounts skipped{};
    {
        MeasurementWorker worker(two);
        std::mt19937_64 rng(10);
        std::size_t at = 0;
        for (std::size_t batch_index = 0; at < frames.size(); ++batch_index) {
            const std::size_t n = std::min<std::size_t>(frames.size() - at, 1 + rng() % 2000);
            MeasurementWorker::Batch batch = worker.take_spare();
            if (batch_index % 3 != 2) {  // two of three batches go over undecoded
                batch.frames.assign(frames.begin() + static_cast<std::ptrdiff_t>(at),
                                    frames.begin() + static_cast<std::ptrdiff_t>(at + n));
                batch.storage.push_back(arena);
                batch.link_type = capture::link_type::ethernet;
                for (std::size_t i = at; i < at + n; ++i) {
                    std::vector<core::PacketRecord> scratch;
                    const auto reason = decode_into(scratch, capture::link_type::ethernet, frames[i], {});
                    if (reason != capture::SkipReason::none) ++expected[static_cast<std::size_t>(reason)];
                }
            } else {
                for (std::size_t i = at; i < at + n; ++i) {
                    decode_into(batch.packets, capture::link_type::ethernet, frames[i], {});
                }
            }
            worker.submit(std::move(batch));
            at += n;
        }
        worker.drain();
        worker.take_skipped(skipped);
        EXPECT_EQ(arena.use_count(), 1) << "the worker lets go of the frames' storage once decoded";
        SkipCounts again{};
        worker.take_skipped(again);
        EXPECT_EQ(again, SkipCounts{}) << "taken counts start over";
    }
    EXPECT_EQ(skipped, expected);
    EXPECT_GT(expected[static_cast<std::size_t>(capture::SkipReason::non_ip)], 100u);
    EXPECT_GT(expected[static_cast<std::size_t>(capture::SkipReason::truncated_ip)], 100u);
    flowsketch::testing::expect_same_window(one.summary(core::Window::run), two.summary(core::Window::run));
    EXPECT_GT(one.summary(core::Window::run).flows.expired, 0.0) << "generations turned";
}

}  // namespace
}  // namespace flowsketch::app
