// core/verify: the exact counts --verify checks the sketches against, and the
// checks themselves.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/measure/flow_measurement.hpp"
#include "core/verify/exact_counter.hpp"
#include "core/verify/verification.hpp"
#include "tests/support/measurement_support.hpp"

namespace flowsketch::core {
namespace {

using flowsketch::testing::flow_key;

constexpr std::int64_t sec = 1'000'000'000;

PacketRecord packet(std::uint32_t flow, std::int64_t t, std::uint32_t bytes, std::uint8_t flags = 0x10) {
    return PacketRecord{flow_key(flow), t, bytes, flags};
}

FlowLifecycleConfig lifecycle(std::int64_t timeout_ns, std::uint32_t generations) {
    FlowLifecycleConfig config;
    config.idle_timeout_ns = timeout_ns;
    config.generations = generations;
    config.max_flows = 1000;
    return config;
}

TEST(ExactCounter, CountsEveryKeyUnderEverySpecPerWindow) {
    const std::vector<KeySpec> extra = {KeySpec::parse("dst"), KeySpec::parse("dst:distinct=src")};
    ExactCounter counter(extra, nullptr, 100, 7);
    const std::vector<PacketRecord> first = {packet(1, 0, 100), packet(1, 1, 50), packet(2, 2, 10)};
    ASSERT_TRUE(counter.add_batch(first));
    ExactWindow interval = counter.window(Window::interval);
    EXPECT_EQ(interval.packets, 3u);
    EXPECT_EQ(interval.bytes, 160u);
    ASSERT_EQ(interval.keys.size(), 3u);
    EXPECT_EQ(interval.keys[0]->counts.at(flow_key(1)).packets, 2u);
    EXPECT_EQ(interval.keys[0]->counts.at(flow_key(1)).bytes, 150u);
    EXPECT_EQ(interval.keys[0]->counts.at(flow_key(2)).bytes, 10u);
    // Both flows go to one destination: one dst key, with two distinct sources.
    const FlowKey dst = extra[0].apply(flow_key(1));
    EXPECT_EQ(interval.keys[1]->counts.size(), 1u);
    EXPECT_EQ(interval.keys[1]->counts.at(dst).packets, 3u);
    EXPECT_EQ(interval.keys[2]->distinct.at(dst).size(), 2u);
    EXPECT_EQ(interval.keys[2]->distinct_pairs, 2u);
    EXPECT_FALSE(interval.has_flows);

    counter.start_new_interval();
    ASSERT_TRUE(counter.add_batch(std::vector<PacketRecord>{packet(3, 3, 1)}));
    interval = counter.window(Window::interval);
    EXPECT_EQ(interval.packets, 1u);
    EXPECT_EQ(interval.keys[0]->counts.size(), 1u);
    const ExactWindow run = counter.window(Window::run);
    EXPECT_EQ(run.packets, 4u);
    EXPECT_EQ(run.bytes, 161u);
    EXPECT_EQ(run.keys[0]->counts.size(), 3u);
    EXPECT_EQ(run.keys[2]->distinct.at(dst).size(), 3u);
    EXPECT_GT(counter.memory_bytes(), sizeof(ExactCounter));
}

TEST(ExactCounter, RefusesATablePastItsLimitAndNamesIt) {
    ExactCounter counter({}, nullptr, 3, 7);
    EXPECT_TRUE(counter.add_batch(std::vector<PacketRecord>{packet(1, 0, 1), packet(2, 0, 1), packet(3, 0, 1)}));
    EXPECT_TRUE(counter.exceeded().empty());
    EXPECT_FALSE(counter.add_batch(std::vector<PacketRecord>{packet(4, 0, 1)}));
    EXPECT_EQ(counter.exceeded(), "the interval's 5tuple keys");
    EXPECT_FALSE(counter.add_batch(std::vector<PacketRecord>{packet(1, 0, 1)}));  // stays refused
}

// T = 8 s, G = 8: generations of 1 s from the first packet; a flow is active
// while its last generation is among the current and the 8 before, and
// expires at the boundary that starts generation last + 9.
TEST(ExactCounter, FollowsTheLifecycleGenerationClock) {
    const FlowLifecycleConfig config = lifecycle(8 * sec, 8);
    ExactCounter counter({}, &config, 100, 7);
    ASSERT_TRUE(counter.add_batch(std::vector<PacketRecord>{
        packet(1, 0, 60), packet(2, sec / 2, 60, 0x11), packet(2, sec / 2 + 1, 60, 0x11)}));
    counter.advance_to(5 * sec);
    ExactWindow w = counter.window(Window::interval);
    EXPECT_EQ(w.flows.new_flows, 2u);
    EXPECT_EQ(w.flows.active, 2u);
    EXPECT_EQ(w.flows.expired, 0u);
    EXPECT_EQ(w.flows.ended, 1u);  // a retransmitted FIN counts once
    counter.start_new_interval();

    counter.advance_to(9 * sec - 1);  // generation 8: both still active
    EXPECT_EQ(counter.window(Window::interval).flows.active, 2u);
    counter.advance_to(9 * sec);  // generation 9 starts: both expire
    w = counter.window(Window::interval);
    EXPECT_EQ(w.flows.active, 0u);
    EXPECT_EQ(w.flows.expired, 2u);
    ASSERT_TRUE(counter.add_batch(std::vector<PacketRecord>{packet(1, 9 * sec + 5, 60)}));
    w = counter.window(Window::interval);
    EXPECT_EQ(w.flows.new_flows, 1u);  // back after expiring: new again
    EXPECT_EQ(w.flows.expired, 2u);    // and its expiry counted once
    EXPECT_EQ(w.flows.active, 1u);
    EXPECT_EQ(w.flows.ended, 0u);
    const ExactWindow run = counter.window(Window::run);
    EXPECT_EQ(run.flows.new_flows, 3u);
    EXPECT_EQ(run.flows.expired, 2u);
    EXPECT_EQ(run.flows.ended, 1u);
    EXPECT_EQ(run.flows.active, 1u);
}

// The exact lifecycle against FlowLifecycle's estimates on a stream whose
// filter is far below its plan: new and ended are exact there, and active
// and expired lie within their stated errors.
TEST(ExactCounter, AgreesWithTheLifecycleWhereItsEstimatesAreExact) {
    MeasurementConfig config;
    config.sketch = CountMinParams::for_error(0.01, 0.01, CountMinVariant::kirsch_mitzenmacher);
    config.lifecycle = lifecycle(2 * sec, 4);
    config.lifecycle.max_flows = 100'000;
    FlowMeasurement measurement(config);
    ExactCounter counter({}, &config.lifecycle, 1'000'000, config.hash_seed);
    // 2,000 flows at a time, each sending every 0.6 s; at 6 s flows 0..999
    // stop (and expire 2 to 2.5 s later) and 2000..2999 start; a few FINs.
    std::vector<PacketRecord> stream;
    for (std::uint32_t step = 0; step < 40'000; ++step) {
        const std::uint32_t flow = (step < 20'000 ? 0 : 1000) + step % 2000;
        const std::int64_t t = static_cast<std::int64_t>(step) * 300'000;  // 0.3 ms apart, 12 s
        stream.push_back(packet(flow, t, 100, step % 997 == 0 ? 0x01 : 0x10));
    }
    for (std::size_t begin = 0; begin < stream.size(); begin += 1000) {
        const std::span<const PacketRecord> batch(stream.data() + begin, 1000);
        measurement.add_batch(batch);
        ASSERT_TRUE(counter.add_batch(batch));
        if ((begin / 1000) % 8 == 7) {
            const std::int64_t end = batch.back().timestamp_ns + 1;
            measurement.advance_to(end);
            counter.advance_to(end);
            const WindowSummary summary = measurement.summary(Window::interval);
            const ExactWindow exact = counter.window(Window::interval);
            EXPECT_EQ(summary.flows.new_flows, exact.flows.new_flows);
            EXPECT_EQ(summary.flows.ended, exact.flows.ended);
            const VerifySection section = verify_window(summary, exact, 0.01, 0.01, 10);
            EXPECT_TRUE(section.flows.active.within) << summary.flows.active << " vs " << exact.flows.active;
            EXPECT_TRUE(section.flows.expired.within) << summary.flows.expired << " vs " << exact.flows.expired;
            EXPECT_EQ(section.packets, summary.packets);
            measurement.start_new_interval();
            counter.start_new_interval();
        }
    }
}

HeavyHitter row(std::uint32_t flow, std::uint64_t estimate, std::uint64_t lower) {
    HeavyHitter hitter;
    hitter.key = flow_key(flow);
    hitter.estimate = estimate;
    hitter.lower = lower;
    return hitter;
}

// Truths: flow 1: 50, 2: 30, 3: 30, 4: 5, 5: 1. Top 2: {1} and one of the tied {2, 3}.
TEST(Verification, ListsErrorBelowLowerRecallAndPrecision) {
    ExactCounter counter({}, nullptr, 100, 7);
    std::vector<PacketRecord> packets;
    for (const auto& [flow, n] : std::vector<std::pair<std::uint32_t, int>>{{1, 50}, {2, 30}, {3, 30}, {4, 5}, {5, 1}}) {
        for (int i = 0; i < n; ++i) packets.push_back(packet(flow, 0, 10));
    }
    ASSERT_TRUE(counter.add_batch(packets));
    WindowSummary summary;
    summary.packets = 116;
    summary.top_packets.total = 116;
    summary.top_packets.weight = Weight::packets;
    // Flow 3 (tied with 2) and flow 4 listed; 4's truth 5 lies below its lower bound 8.
    summary.top_packets.rows = {row(3, 36, 24), row(4, 14, 8)};
    summary.top_bytes.weight = Weight::bytes;
    summary.top_bytes.total = 1160;
    summary.top_bytes.rows = {row(1, 500, 400)};
    const VerifySection v = verify_window(summary, counter.window(Window::interval), 0.1, 0.05, 2);
    EXPECT_EQ(v.top_packets.checked, 2u);
    EXPECT_EQ(v.top_packets.max_error, 9);  // 14 − 5
    EXPECT_DOUBLE_EQ(v.top_packets.bound, 11.6);
    EXPECT_EQ(v.top_packets.below_lower, 1u);
    EXPECT_EQ(v.top_packets.exact_top, 2u);
    EXPECT_DOUBLE_EQ(v.top_packets.recall, 0.5);     // flow 3 stands for the tie; flow 1 missed
    EXPECT_DOUBLE_EQ(v.top_packets.precision, 0.5);  // flow 4 is not in the top 2
    EXPECT_EQ(v.top_bytes.max_error, 0);
    EXPECT_EQ(v.top_bytes.below_lower, 0u);
    EXPECT_DOUBLE_EQ(v.top_bytes.recall, 0.5);
    EXPECT_DOUBLE_EQ(v.top_bytes.precision, 1.0);
    EXPECT_EQ(v.rows.checks, 3u);
    EXPECT_EQ(v.rows.breaks, 1u);
    EXPECT_EQ(v.exact_keys, 5u);
}

// The quantile against the binomial tail summed directly.
TEST(Verification, BinomialQuantileIsTheSmallestWithTheTailBelow) {
    EXPECT_EQ(binomial_upper_quantile(0, 0.1, 1e-6), 0u);
    for (const auto& [n, p] : std::vector<std::pair<std::uint64_t, double>>{{20, 0.1}, {4, 0.0027}, {300, 0.01}}) {
        const std::uint64_t k = binomial_upper_quantile(n, p, 1e-6);
        std::vector<double> pmf(n + 1);
        for (std::uint64_t i = 0; i <= n; ++i) {
            const auto dn = static_cast<double>(n);
            const auto di = static_cast<double>(i);
            pmf[i] = std::exp(std::lgamma(dn + 1) - std::lgamma(di + 1) - std::lgamma(dn - di + 1) + di * std::log(p) +
                              (dn - di) * std::log1p(-p));
        }
        const auto tail_above = [&](std::uint64_t j) {
            double sum = 0;
            for (std::uint64_t i = j + 1; i <= n; ++i) sum += pmf[i];
            return sum;
        };
        EXPECT_LE(tail_above(k), 1e-6 * 1.0001) << n << " " << p;
        if (k > 0) {
            EXPECT_GT(tail_above(k - 1), 1e-6) << n << " " << p;
        }
    }
    EXPECT_EQ(binomial_upper_quantile(4, 0.0027, 1e-6), 2u);
}

// A run's verdict sums its reports: breaks that no single report shows as too
// many can be too many over the run.
TEST(Verification, TheRunsVerdictSumsItsReports) {
    VerifySection report;
    report.flow_bounds.probability = flow_bound_probability;
    report.flow_bounds.checks = 4;
    report.flow_bounds.breaks = 2;
    report.flow_bounds.allowed = binomial_upper_quantile(4, flow_bound_probability, strict_tail);
    report.rows.probability = 0.001;
    report.rows.checks = 20;
    ASSERT_FALSE(report.broken());
    VerifyVerdict verdict;
    verdict.add(report);
    EXPECT_FALSE(verdict.broken());
    for (int i = 0; i < 9; ++i) verdict.add(report);
    EXPECT_EQ(verdict.reports, 10u);
    EXPECT_EQ(verdict.broken_reports, 0u);
    EXPECT_EQ(verdict.flow_bounds.checks, 40u);
    EXPECT_EQ(verdict.flow_bounds.breaks, 20u);
    EXPECT_TRUE(verdict.flow_bounds.broken());
    EXPECT_FALSE(verdict.rows.broken());
    EXPECT_TRUE(verdict.broken());
}

}  // namespace
}  // namespace flowsketch::core
