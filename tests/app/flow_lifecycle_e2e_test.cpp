// The flow section of the reports against exact lifetime truth from
// `flowsketch gen --lifetimes` (tests/support/flow_truth.hpp).
//
// The sketch expires a flow between T and T + P after its last packet
// (P = T/G, generation granularity), so every comparison brackets the truth
// computed with idle timeout T and with T + P:
//  - new: never above truth(T) (a flow is new only if every cell expired, which
//    needs a silence > T); at least truth(T + P) − new_undercount_bound;
//  - expired (cumulative over the run): between truth(T + P) and truth(T),
//    widened by 3 standard errors of the estimate;
//  - active at an interval's end: between truth(T) and truth(T + P), ± 3 SE;
//  - ended: never above the truth, at least truth − ended_undercount_bound.
// The seen filter is sized near the load (fpr ≈ 1%) so the bounds are exercised.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>
#include <nlohmann/json.hpp>

#include "tests/support/flow_truth.hpp"
#include "tests/support/test_support.hpp"

namespace flowsketch::testing {
namespace {

using nlohmann::json;

constexpr std::int64_t second = 1'000'000'000;
constexpr std::int64_t idle_timeout = second;
constexpr std::int64_t generations = 8;
constexpr std::int64_t period = idle_timeout / generations;

class FlowLifecycleEndToEnd : public ::testing::TestWithParam<std::tuple<const char*, int>> {
protected:
    static void SetUpTestSuite() {
        path_ = tmp_path("lifetimes-" + std::to_string(::getpid()) + ".pcap");
        // ~12 s of arrivals at 1,500 flows/s, 1 s mean duration, half the flows
        // pausing 0.5–1.5 s (both sides of T = 1 s), FIN/RST endings.
        const RunResult gen = run_flowsketch(
            "gen --lifetimes --out " + path_ +
            " --packets 240000 --flows 18000 --flow-rate 1500 --duration-mean 1"
            " --idle-gap 1 --idle-gap-fraction 0.5 --seed 21");
        ASSERT_EQ(gen.exit_code, 0) << gen.err;
        truth_ = read_lifetime_truth(path_ + ".truth.tsv");
    }
    static void TearDownTestSuite() {
        std::remove(path_.c_str());
        std::remove((path_ + ".truth.tsv").c_str());
    }
    static inline std::string path_;
    static inline LifetimeTruth truth_;
};

TEST_P(FlowLifecycleEndToEnd, EveryIntervalWithinItsStatedBounds) {
    const RunResult run = run_flowsketch(
        "-r " + path_ + " --interval 1 --format json --top 1 --idle-timeout 1 --generations 8"
        " --max-flows 3000 --flow-fpr 0.01 --seen-filter " + std::string(std::get<0>(GetParam())) +
        " --threads " + std::to_string(std::get<1>(GetParam())));
    ASSERT_EQ(run.exit_code, 0) << run.err;
    std::vector<json> intervals;
    for (const auto& line : lines_of(run.out)) {
        json report = json::parse(line);
        if (report.at("kind") == "interval") intervals.push_back(std::move(report));
    }
    ASSERT_GE(intervals.size(), 10u);
    // The last interval ends after the capture does: its expiries past the last
    // packet are not observed, so it is left out of the comparison.
    intervals.pop_back();
    std::vector<std::int64_t> boundaries;
    for (const auto& report : intervals) {
        const auto start = std::llround(report.at("start").get<double>() * 1e9);
        const auto end = std::llround(report.at("end").get<double>() * 1e9);
        ASSERT_TRUE(boundaries.empty() || boundaries.back() == start) << "contiguous intervals";
        if (boundaries.empty()) boundaries.push_back(start);
        boundaries.push_back(end);
    }
    const auto exact = lifecycle_counts(truth_, boundaries, idle_timeout);
    const auto late = lifecycle_counts(truth_, boundaries, idle_timeout + period);

    double expired_sum = 0, expired_var = 0;
    std::uint64_t truth_expired = 0, late_expired = 0;
    std::uint64_t undercounts = 0, total_new = 0;
    for (std::size_t i = 0; i < intervals.size(); ++i) {
        SCOPED_TRACE("interval " + std::to_string(i));
        const json& flows = intervals[i].at("flows");
        const auto new_flows = flows.at("new").get<std::uint64_t>();
        const double bound = flows.at("new_undercount_bound").get<double>();
        EXPECT_LE(new_flows, exact[i].new_flows) << "new never overcounts";
        EXPECT_GE(static_cast<double>(new_flows), static_cast<double>(late[i].new_flows) - bound);
        undercounts += late[i].new_flows > new_flows ? late[i].new_flows - new_flows : 0;
        total_new += new_flows;

        const double active = flows.at("active").get<double>();
        const double active_se = flows.at("active_stderr").get<double>();
        if (std::string(std::get<0>(GetParam())) != "two-choice") {  // n̂ ± 3 stderr
            EXPECT_GE(active + 3 * active_se + 1, static_cast<double>(exact[i].active_at_end));
            EXPECT_LE(active - 3 * active_se - 1, static_cast<double>(late[i].active_at_end));
        } else {  // two-choice states a proven interval
            EXPECT_GE(flows.at("active_upper").get<double>() + 1, static_cast<double>(exact[i].active_at_end));
            EXPECT_LE(flows.at("active_lower").get<double>() - 1, static_cast<double>(late[i].active_at_end));
        }

        expired_sum += flows.at("expired").get<double>();
        expired_var += std::pow(flows.at("expired_stderr").get<double>(), 2);
        truth_expired += exact[i].expired;
        late_expired += late[i].expired;
        const double expired_se = std::sqrt(expired_var);
        EXPECT_LE(expired_sum, static_cast<double>(truth_expired) + 3 * expired_se + 1);
        EXPECT_GE(expired_sum, static_cast<double>(late_expired) - 3 * expired_se - 1);

        const auto ended = flows.at("ended").get<std::uint64_t>();
        EXPECT_LE(ended, exact[i].ended);
        EXPECT_GE(static_cast<double>(ended),
                  static_cast<double>(exact[i].ended) - flows.at("ended_undercount_bound").get<double>());
        const double fpr = flows.at("fpr").get<double>();
        EXPECT_GT(fpr, 0.0);
        EXPECT_LT(fpr, 0.2);
    }
    // The test has teeth: the filter was loaded enough to hide some new flows.
    EXPECT_GT(total_new, 10000u);
    RecordProperty("new_flows_missed", std::to_string(undercounts));
}

INSTANTIATE_TEST_SUITE_P(SeenFiltersAndThreads, FlowLifecycleEndToEnd,
                         ::testing::Combine(::testing::Values("blocked", "standard", "two-choice"),
                                            ::testing::Values(1, 2)),
                         [](const auto& param_info) {
                             std::string filter = std::get<0>(param_info.param);
                             std::replace(filter.begin(), filter.end(), '-', '_');
                             return filter + "_threads" + std::to_string(std::get<1>(param_info.param));
                         });

// More active flows than planned: the report says so (warning field and one
// stderr line), memory stays as configured, nothing crashes.
TEST(FlowLifecycleOverfill, WarnsAndKeepsMemory) {
    const std::string path = tmp_path("overfill-" + std::to_string(::getpid()) + ".pcap");
    ASSERT_EQ(run_flowsketch("gen --out " + path + " --packets 200000 --flows 100000 --zipf 0 --seed 4").exit_code, 0);
    const RunResult small = run_flowsketch("-r " + path + " --interval 0 --format json --max-flows 100000");
    const RunResult flooded = run_flowsketch("-r " + path + " --interval 0 --format json --max-flows 5000");
    std::remove(path.c_str());
    std::remove((path + ".truth.tsv").c_str());
    ASSERT_EQ(small.exit_code, 0) << small.err;
    ASSERT_EQ(flooded.exit_code, 0) << flooded.err;
    const json ok = json::parse(lines_of(small.out).back());
    const json over = json::parse(lines_of(flooded.out).back());
    EXPECT_FALSE(ok.at("flows").at("overfilled").get<bool>());
    EXPECT_EQ(small.err, "");
    EXPECT_TRUE(over.at("flows").at("overfilled").get<bool>());
    EXPECT_EQ(lines_of(flooded.err).size(), 1u) << flooded.err;
    EXPECT_NE(flooded.err.find("overfilled"), std::string::npos);
    bool warned = false;
    for (const auto& w : over.at("warnings")) warned |= w.get<std::string>().find("overfilled") != std::string::npos;
    EXPECT_TRUE(warned);
    EXPECT_GT(over.at("flows").at("fpr").get<double>(), 0.01);
    // Memory is fixed by the configuration: same sizing, same bytes.
    const RunResult again = run_flowsketch("-r " + pcap_path("zeek-mixed-vlan-mpls.pcap") +
                                           " --interval 0 --format json --max-flows 5000");
    EXPECT_EQ(json::parse(lines_of(again.out).back()).at("memory_bytes"), over.at("memory_bytes"));
    // Heavy hitters are still counted within their bounds while the filter overflows.
    EXPECT_EQ(over.at("packets").get<std::uint64_t>(), 200000u);
}

}  // namespace
}  // namespace flowsketch::testing
