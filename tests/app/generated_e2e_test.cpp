// End-to-end on generated traffic with exact per-flow truth (`flowsketch gen`):
// the Count-Min guarantees hold for what the binary reports, and the heavy
// hitters it finds are the true ones.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "tests/support/json_reports.hpp"
#include "tests/support/test_support.hpp"

namespace flowsketch::testing {
namespace {

using nlohmann::json;

// Every test runs with --threads 1 and --threads 2: the bounds hold for each.
class GeneratedTrace : public ::testing::TestWithParam<int> {
protected:
    std::string threads() const { return "--threads " + std::to_string(GetParam()) + " "; }
    static void SetUpTestSuite() {
        // Per process: ctest runs each test in its own process, possibly in parallel.
        path_ = tmp_path("generated-e2e-" + std::to_string(::getpid()) + ".pcap");
        // 400k packets over 40k flows, Zipf 1.1, IPv4/IPv6 mix, some VLAN tags,
        // ~4 s of packet time at 100 kpps.
        const RunResult gen = run_flowsketch("gen --out " + path_ +
                                             " --packets 400000 --flows 40000 --zipf 1.1 --ipv6 0.3"
                                             " --vlan 0.2 --rate 100000 --seed 11");
        ASSERT_EQ(gen.exit_code, 0) << gen.err;
        truth_ = read_truth(path_ + ".truth.tsv");
    }
    static void TearDownTestSuite() {
        std::remove(path_.c_str());
        std::remove((path_ + ".truth.tsv").c_str());
    }
    static std::vector<std::pair<std::uint64_t, TruthKey>> ranked(bool by_packets) {
        std::vector<std::pair<std::uint64_t, TruthKey>> out;
        for (const auto& [key, flow] : truth_.flows) out.emplace_back(by_packets ? flow.packets : flow.bytes, key);
        std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
        return out;
    }
    static inline std::string path_;
    static inline Truth truth_;
};

// With a deliberately small sketch (ε = 0.002 of 400k packets = 800 packets of
// slack) the bound is exercised, not trivially met: every reported flow's true
// count must be in [lower, estimate]. The chance that any one of the 2×50
// reported intervals fails is ≤ δ each; at δ = 1e-4 the test is
// deterministic for this seed and fails only if the bound is wrong.
TEST_P(GeneratedTrace, EveryReportedCountIsWithinItsBound) {
    const RunResult run = run_flowsketch(threads() + "-r " + path_ +
                                         " --interval 0 --format json --top 50 --epsilon 0.002 --delta 0.0001");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const json report = json::parse(lines_of(run.out).back());
    EXPECT_EQ(report.at("packets").get<std::uint64_t>(), truth_.totals.at("ip_packets"));
    EXPECT_EQ(report.at("bytes").get<std::uint64_t>(), truth_.totals.at("ip_bytes"));
    for (const char* ranking : {"top_packets", "top_bytes"}) {
        const bool by_packets = std::string(ranking) == "top_packets";
        ASSERT_EQ(report.at(ranking).size(), 50u);
        for (const auto& flow : report.at(ranking)) {
            const auto it = truth_.flows.find(truth_key_of(flow));
            ASSERT_NE(it, truth_.flows.end()) << flow.dump();
            const std::uint64_t truth = by_packets ? it->second.packets : it->second.bytes;
            EXPECT_GE(flow.at("estimate").get<std::uint64_t>(), truth) << flow.dump();
            EXPECT_LE(flow.at("lower").get<std::uint64_t>(), truth) << flow.dump();
        }
    }
}

// The true top 10 by packets are separated by far more than ε·N at the
// defaults (ε·N = 400 packets), so the reported top 10 must be exactly them,
// in order.
TEST_P(GeneratedTrace, FindsTheTrueHeavyHittersInOrder) {
    const RunResult run = run_flowsketch(threads() + "-r " + path_ + " --interval 0 --format json --top 10");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const json report = json::parse(lines_of(run.out).back());
    const auto truth = ranked(true);
    const json& top = report.at("top_packets");
    ASSERT_EQ(top.size(), 10u);
    for (std::size_t i = 0; i < 10; ++i) {
        // Ranks are only well defined where the truth is separated by > ε·N.
        ASSERT_GT(truth[i].first, truth[i + 1].first + 400) << "test premise: top 10 separated";
        EXPECT_EQ(truth_key_of(top[i]), truth[i].second) << "rank " << i + 1;
    }
}

// Interval reports on generated traffic: the run is split into aligned
// 1-second intervals whose packet counts add up to the truth.
TEST_P(GeneratedTrace, IntervalsAddUpToTheTruth) {
    const RunResult run = run_flowsketch(threads() + "-r " + path_ + " --interval 1 --format json --top 5");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const auto lines = lines_of(run.out);
    ASSERT_GE(lines.size(), 4u);
    std::uint64_t packets = 0;
    for (std::size_t i = 0; i + 1 < lines.size(); ++i) packets += json::parse(lines[i]).at("packets").get<std::uint64_t>();
    EXPECT_EQ(packets, truth_.totals.at("ip_packets"));
}

// Same answer under either index scheme and with conservative update: the
// bound holds for each (conservative never estimates above plain).
TEST_P(GeneratedTrace, StandardAndConservativeVariantsKeepTheBound) {
    for (const std::string options : {"--cms standard", "--conservative", "--cms standard --conservative"}) {
        const RunResult run = run_flowsketch(threads() + "-r " + path_ + " --interval 0 --format json --top 20 --epsilon 0.002 " + options);
        ASSERT_EQ(run.exit_code, 0) << run.err;
        const json report = json::parse(lines_of(run.out).back());
        for (const auto& flow : report.at("top_packets")) {
            const auto it = truth_.flows.find(truth_key_of(flow));
            ASSERT_NE(it, truth_.flows.end()) << flow.dump();
            EXPECT_GE(flow.at("estimate").get<std::uint64_t>(), it->second.packets) << options;
            EXPECT_LE(flow.at("lower").get<std::uint64_t>(), it->second.packets) << options;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Threads, GeneratedTrace, ::testing::Values(1, 2),
                         [](const auto& param_info) { return "threads" + std::to_string(param_info.param); });

// The second thread only moves the sketch updates: the reports are the same
// bytes, with the flow lifecycle and without it.
TEST_P(GeneratedTrace, ReportsDoNotDependOnTheThreadCount) {
    for (const std::string lifecycle : {"", " --no-flows"}) {
        const std::string options = " --interval 0.5 --format json --top 20" + lifecycle;
        const RunResult one = run_flowsketch("--threads 1 -r " + path_ + options);
        const RunResult two = run_flowsketch(threads() + "-r " + path_ + options);
        ASSERT_EQ(one.exit_code, 0) << one.err;
        ASSERT_EQ(two.exit_code, 0) << two.err;
        EXPECT_GT(lines_of(one.out).size(), 5u);
        EXPECT_EQ(one.out, two.out) << lifecycle;
    }
}

}  // namespace
}  // namespace flowsketch::testing
