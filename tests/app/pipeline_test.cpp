// The pipeline's interval logic in packet time, driven in-process.
#include <gtest/gtest.h>

#include <array>
#include <limits>
#include <vector>

#include "src/pipeline.hpp"

namespace flowsketch::app {
namespace {

class CollectingWriter final : public reports::ReportWriter {
public:
    void write(const reports::Report& report) override { reports.push_back(report); }
    std::vector<reports::Report> reports;
};

// A raw-IP IPv4/UDP datagram from 10.0.0.<host> port 1000+host to 10.0.0.254:53.
std::array<std::uint8_t, 28> udp_datagram(std::uint8_t host) {
    std::array<std::uint8_t, 28> d{};
    d[0] = 0x45;
    d[3] = 28;  // total length
    d[8] = 64;
    d[9] = 17;
    d[12] = 10, d[15] = host;
    d[16] = 10, d[19] = 254;
    d[20] = 0x03, d[21] = static_cast<std::uint8_t>(0xe8 + host);  // 1000 + host
    d[23] = 53;
    d[25] = 8;
    return d;
}

constexpr std::int64_t s = 1'000'000'000;

struct Harness {
    explicit Harness(double interval) {
        config.interval_seconds = interval;
        config.measurement.sketch = core::CountMinParams::for_error(0.01, 0.01, core::CountMinVariant::kirsch_mitzenmacher);
        pipeline = std::make_unique<Pipeline>(config, writer);
    }
    void frame(std::int64_t ts, std::uint8_t host, std::uint32_t wire = 100) {
        const auto bytes = udp_datagram(host);
        capture::Frame f;
        f.timestamp_ns = ts;
        f.captured_length = bytes.size();
        f.wire_length = wire;
        f.data = bytes.data();
        pipeline->on_frame(f, capture::link_type::raw);
    }
    PipelineConfig config;
    CollectingWriter writer;
    std::unique_ptr<Pipeline> pipeline;
};

TEST(Pipeline, IntervalZeroGivesOnlyTheFinalReport) {
    Harness h(0);
    for (int i = 0; i < 50; ++i) h.frame(1000 * s + i * s, 1);
    h.pipeline->finish();
    ASSERT_EQ(h.writer.reports.size(), 1u);
    EXPECT_EQ(h.writer.reports[0].kind, reports::ReportKind::final_report);
    EXPECT_EQ(h.writer.reports[0].packets, 50u);
    EXPECT_DOUBLE_EQ(h.writer.reports[0].start, 1000.0);
    EXPECT_DOUBLE_EQ(h.writer.reports[0].end, 1049.0);
}

TEST(Pipeline, IntervalsAreAlignedAndGapsAreNotReported) {
    Harness h(10);
    h.frame(1003 * s, 1);
    h.frame(1008 * s, 2);
    h.frame(1012 * s, 1);        // second interval [1010, 1020)
    h.frame(5000 * s + 1, 3);    // a long gap: no empty reports in between
    h.pipeline->finish();
    ASSERT_EQ(h.writer.reports.size(), 4u);
    EXPECT_DOUBLE_EQ(h.writer.reports[0].start, 1000.0);
    EXPECT_DOUBLE_EQ(h.writer.reports[0].end, 1010.0);
    EXPECT_EQ(h.writer.reports[0].packets, 2u);
    EXPECT_DOUBLE_EQ(h.writer.reports[1].start, 1010.0);
    EXPECT_EQ(h.writer.reports[1].packets, 1u);
    EXPECT_DOUBLE_EQ(h.writer.reports[2].start, 5000.0);
    EXPECT_EQ(h.writer.reports[2].packets, 1u);
    EXPECT_EQ(h.writer.reports[3].kind, reports::ReportKind::final_report);
    EXPECT_EQ(h.writer.reports[3].packets, 4u);
}

// The run's end cuts its last interval short; the intervals before it are whole.
TEST(Pipeline, OnlyTheLastIntervalIsPartial) {
    Harness h(10);
    h.frame(1003 * s, 1);
    h.frame(1012 * s, 1);
    h.frame(1021 * s, 2);
    h.pipeline->finish();
    ASSERT_EQ(h.writer.reports.size(), 4u);
    EXPECT_FALSE(h.writer.reports[0].partial);
    EXPECT_FALSE(h.writer.reports[1].partial);
    EXPECT_TRUE(h.writer.reports[2].partial);
    EXPECT_EQ(h.writer.reports[2].kind, reports::ReportKind::interval);
    EXPECT_FALSE(h.writer.reports[3].partial);  // the final report is the whole run
}

TEST(Pipeline, LiveIntervalsArePartialOnlyWhenTheCaptureStops) {
    Harness h(10);
    h.config.packet_time_intervals = false;  // the wall-clock timer closes them
    h.pipeline = std::make_unique<Pipeline>(h.config, h.writer);
    h.frame(1003 * s, 1);
    h.pipeline->close_interval_at(1000 * s, 1010 * s);
    h.frame(1012 * s, 1);
    h.pipeline->finish_at(1010 * s, 1000 * s, 1014 * s);
    ASSERT_EQ(h.writer.reports.size(), 3u);
    EXPECT_FALSE(h.writer.reports[0].partial);
    EXPECT_TRUE(h.writer.reports[1].partial);
    EXPECT_DOUBLE_EQ(h.writer.reports[1].end, 1014.0);
    EXPECT_EQ(h.writer.reports[2].kind, reports::ReportKind::final_report);
}

// A packet whose timestamp goes backwards is counted in the current interval:
// never lost, never opens an interval in the past.
TEST(Pipeline, BackwardTimestampsCountInTheCurrentInterval) {
    Harness h(10);
    h.frame(1015 * s, 1);
    h.frame(1001 * s, 2);  // earlier than the current interval's start
    h.frame(1016 * s, 1);
    h.pipeline->finish();
    ASSERT_EQ(h.writer.reports.size(), 2u);
    EXPECT_EQ(h.writer.reports[0].packets, 3u);
    EXPECT_DOUBLE_EQ(h.writer.reports[0].start, 1010.0);
    EXPECT_GE(h.writer.reports[0].end, h.writer.reports[0].start);
    EXPECT_EQ(h.writer.reports[1].packets, 3u);
    EXPECT_DOUBLE_EQ(h.writer.reports[1].start, 1001.0);  // the run spans every frame
    EXPECT_DOUBLE_EQ(h.writer.reports[1].end, 1016.0);
}

TEST(Pipeline, HeavyHittersPerIntervalAndOverall) {
    Harness h(10);
    for (int i = 0; i < 30; ++i) h.frame(1000 * s + i, 1, 60);   // interval 1: host 1 leads
    for (int i = 0; i < 5; ++i) h.frame(1000 * s + i, 2, 1500);  // ... by packets, not bytes
    for (int i = 0; i < 40; ++i) h.frame(1010 * s + i, 3, 60);   // interval 2: host 3 leads
    h.pipeline->finish();
    ASSERT_EQ(h.writer.reports.size(), 3u);
    const auto& first = h.writer.reports[0];
    ASSERT_FALSE(first.top_packets.empty());
    EXPECT_EQ(first.top_packets[0].key.src[3], 1);
    EXPECT_EQ(first.top_packets[0].estimate, 30u);
    EXPECT_EQ(first.top_bytes[0].key.src[3], 2);
    EXPECT_EQ(first.top_bytes[0].estimate, 7500u);
    const auto& second = h.writer.reports[1];
    ASSERT_EQ(second.top_packets.size(), 1u);  // interval counters were reset
    EXPECT_EQ(second.top_packets[0].key.src[3], 3);
    const auto& final = h.writer.reports[2];
    ASSERT_EQ(final.top_packets.size(), 3u);
    EXPECT_EQ(final.top_packets[0].key.src[3], 3);
    EXPECT_EQ(final.top_packets[0].estimate, 40u);
    EXPECT_EQ(final.top_packets[1].estimate, 30u);
    EXPECT_EQ(final.packets, 75u);
}

TEST(Pipeline, MalformedFramesAreCountedByReasonNotFatal) {
    Harness h(0);
    h.frame(1000 * s, 1);
    const std::uint8_t garbage[3] = {0x45, 0, 0};
    capture::Frame f;
    f.timestamp_ns = 1001 * s;
    f.captured_length = 3;
    f.wire_length = 3;
    f.data = garbage;
    h.pipeline->on_frame(f, capture::link_type::raw);
    h.frame(1002 * s, 1);
    h.pipeline->finish();
    const auto& report = h.writer.reports.back();
    EXPECT_EQ(report.frames, 3u);
    EXPECT_EQ(report.packets, 2u);
    std::uint64_t truncated_ip = 0;
    for (const auto& skip : report.skipped) {
        if (skip.name == "truncated_ip") truncated_ip = skip.count;
    }
    EXPECT_EQ(truncated_ip, 1u);
}

}  // namespace
}  // namespace flowsketch::app

namespace flowsketch::app {
namespace {

// Driven directly with extreme times, the pipeline saturates its last interval
// instead of overflowing (UBSan checks) or reporting once per frame.
TEST(Pipeline, ExtremeTimestampsSaturateTheLastInterval) {
    Harness h(10);
    constexpr auto max = std::numeric_limits<std::int64_t>::max();
    h.frame(max - 3, 1);
    h.frame(max, 1);
    h.frame(max, 2);
    h.pipeline->finish();
    ASSERT_EQ(h.writer.reports.size(), 2u);  // one interval, one final
    EXPECT_EQ(h.writer.reports[0].packets, 3u);
    EXPECT_EQ(h.writer.reports[1].packets, 3u);
}

}  // namespace
}  // namespace flowsketch::app
