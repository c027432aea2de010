// The lifecycle reference (tests/support/flow_truth.hpp) on hand-made truths
// with counts worked out by hand, and against a packet-by-packet brute force
// on random flows.
#include "tests/support/flow_truth.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

using flowsketch::testing::FlowEndFlag;
using flowsketch::testing::IntervalLifecycle;
using flowsketch::testing::lifecycle_counts;
using flowsketch::testing::LifetimeTruth;
using flowsketch::testing::parse_lifetime_truth;

const std::string header =
    "# gap_min_ns 100\n"
    "proto\tsrc\tdst\tsport\tdport\tpackets\tbytes\tfirst_ns\tlast_ns\tend_flag\tpause_ns\tgaps\n";

// Times in ns. Flow A (TCP): packets 10 20 30 250 260, FIN; the 220 ns silence is
// its pause. Flow B (UDP): 50 60 170 190 (a 110 ns silence). Flow C (TCP): one
// packet at 400, RST. Silences above gap_min 100 are listed.
const std::string abc = header +
                        "6\t10.0.0.1\t10.0.0.2\t1\t2\t5\t300\t10\t260\tfin\t220\t30:250\n"
                        "17\t10.0.0.3\t10.0.0.4\t3\t4\t4\t240\t50\t190\t-\t0\t60:170\n"
                        "6\t10.0.0.5\t10.0.0.6\t5\t6\t1\t60\t400\t400\trst\t0\t-\n";

const std::vector<std::int64_t> hundreds = {0, 100, 200, 300, 400, 500};

IntervalLifecycle row(std::int64_t start, std::uint64_t fresh, std::uint64_t returning,
                      std::uint64_t at_start, std::uint64_t at_end, std::uint64_t expired,
                      std::uint64_t ended) {
    return {start, start + 100, fresh, returning, at_start, at_end, expired, ended};
}

TEST(FlowTruth, ParsesTheLifetimeColumns) {
    const LifetimeTruth truth = parse_lifetime_truth(abc);
    EXPECT_EQ(truth.gap_min_ns, 100);
    ASSERT_EQ(truth.flows.size(), 3u);
    EXPECT_EQ(truth.flows[0].key, "6\t10.0.0.1\t10.0.0.2\t1\t2");
    EXPECT_EQ(truth.flows[0].end, FlowEndFlag::fin);
    EXPECT_EQ(truth.flows[0].pause_ns, 220);
    ASSERT_EQ(truth.flows[0].gaps.size(), 1u);
    EXPECT_EQ(truth.flows[0].gaps[0], (std::pair<std::int64_t, std::int64_t>{30, 250}));
    EXPECT_EQ(truth.flows[1].end, FlowEndFlag::none);
    EXPECT_EQ(truth.flows[2].end, FlowEndFlag::rst);
    EXPECT_TRUE(truth.flows[2].gaps.empty());
}

TEST(FlowTruth, TimeoutLongerThanOneSilence) {
    // T = 150: A has sessions [10, 30] (expires 180) and [250, 260] (expires 410);
    // B's 110 ns silence is within T: one session [50, 190], expires 340; C expires 550.
    const auto got = lifecycle_counts(parse_lifetime_truth(abc), hundreds, 150);
    const std::vector<IntervalLifecycle> want = {
        row(0, 2, 0, 0, 2, 0, 0),    // A and B start
        row(100, 0, 0, 2, 1, 1, 0),  // A expires at 180
        row(200, 1, 1, 1, 2, 0, 1),  // A returns at 250, FIN at 260
        row(300, 0, 0, 2, 1, 1, 0),  // B expires at 340; C at 400 is not in [300, 400)
        row(400, 1, 0, 1, 1, 1, 1),  // C new and RST at 400; A expires at 410
    };
    EXPECT_EQ(got, want);
}

TEST(FlowTruth, TimeoutEqualToGapMinSplitsBothFlows) {
    // T = 100: A [10, 30] exp 130, [250, 260] exp 360; B [50, 60] exp 160,
    // [170, 190] exp 290; C [400] exp 500, which is the end of the last interval:
    // C is still active there (its packet is in [500 - 100, 500)), not expired.
    const auto got = lifecycle_counts(parse_lifetime_truth(abc), hundreds, 100);
    const std::vector<IntervalLifecycle> want = {
        row(0, 2, 0, 0, 2, 0, 0),
        row(100, 1, 1, 2, 1, 2, 0),
        row(200, 1, 1, 1, 1, 1, 1),
        row(300, 0, 0, 1, 0, 1, 0),
        row(400, 1, 0, 0, 1, 0, 1),
    };
    EXPECT_EQ(got, want);
}

TEST(FlowTruth, SilenceOfExactlyTKeepsTheFlowAndBoundariesAreHalfOpen) {
    // Packets at 100 and 250 (silence 150), the first exactly on a boundary.
    const std::string d = header + "17\t10.0.0.7\t10.0.0.8\t7\t8\t2\t120\t100\t250\t-\t0\t100:250\n";
    const LifetimeTruth truth = parse_lifetime_truth(d);
    // T = 150: one session [100, 250], expiring at 400: active at the end of
    // [300, 400) (packet 250 is in [400 - 150, 400)), expired in [400, 500).
    EXPECT_EQ(lifecycle_counts(truth, hundreds, 150),
              (std::vector<IntervalLifecycle>{
                  row(0, 0, 0, 0, 0, 0, 0),
                  row(100, 1, 0, 0, 1, 0, 0),
                  row(200, 0, 0, 1, 1, 0, 0),
                  row(300, 0, 0, 1, 1, 0, 0),
                  row(400, 0, 0, 1, 0, 1, 0),
              }));
    // T = 149: the silence is longer than T: new again at 250.
    EXPECT_EQ(lifecycle_counts(truth, hundreds, 149),
              (std::vector<IntervalLifecycle>{
                  row(0, 0, 0, 0, 0, 0, 0),
                  row(100, 1, 0, 0, 1, 0, 0),
                  row(200, 1, 1, 1, 1, 1, 0),
                  row(300, 0, 0, 1, 0, 1, 0),
                  row(400, 0, 0, 0, 0, 0, 0),
              }));
}

TEST(FlowTruth, RejectsWhatCannotBeExact) {
    const LifetimeTruth truth = parse_lifetime_truth(abc);
    EXPECT_THROW(lifecycle_counts(truth, hundreds, 99), std::invalid_argument);  // < gap_min
    EXPECT_THROW(lifecycle_counts(truth, std::vector<std::int64_t>{0}, 150), std::invalid_argument);
    EXPECT_THROW(lifecycle_counts(truth, std::vector<std::int64_t>{0, 0, 10}, 150),
                 std::invalid_argument);
    EXPECT_THROW(parse_lifetime_truth("proto\tsrc\n"), std::runtime_error);
    EXPECT_THROW(parse_lifetime_truth(header + "6\ta\tb\t1\t2\t2\t9\t10\t20\tfin\t0\t30:40\n"),
                 std::runtime_error);  // gap after the last packet
    EXPECT_THROW(parse_lifetime_truth(header + "6\ta\tb\t1\t2\t2\t9\t10\t20\tend\t0\t-\n"),
                 std::runtime_error);
    EXPECT_THROW(parse_lifetime_truth(
                     "proto\tsrc\tdst\tsport\tdport\tpackets\tbytes\tfirst_ns\tlast_ns\tend_flag"
                     "\tpause_ns\tgaps\n"),
                 std::runtime_error);  // no gap_min_ns
}

// ---------------------------------------------------------------- brute force

struct PacketFlow {
    std::vector<std::int64_t> times;  // sorted
    FlowEndFlag end = FlowEndFlag::none;
};

/// The definitions applied packet by packet, with no sessions and no gap list.
std::vector<IntervalLifecycle> brute_force(const std::vector<PacketFlow>& flows,
                                           const std::vector<std::int64_t>& b, std::int64_t t) {
    std::vector<IntervalLifecycle> out;
    for (std::size_t i = 0; i + 1 < b.size(); ++i) {
        IntervalLifecycle r;
        r.start_ns = b[i];
        r.end_ns = b[i + 1];
        const auto active_at = [&](std::int64_t at) {
            std::uint64_t n = 0;
            for (const auto& f : flows) {
                bool any = false;
                for (const std::int64_t p : f.times) any = any || (p >= at - t && p < at);
                n += any ? 1 : 0;
            }
            return n;
        };
        r.active_at_start = active_at(b[i]);
        r.active_at_end = active_at(b[i + 1]);
        for (const auto& f : flows) {
            const auto& p = f.times;
            for (std::size_t j = 0; j < p.size(); ++j) {
                const bool starts = j == 0 || p[j] - p[j - 1] > t;
                if (starts && p[j] >= b[i] && p[j] < b[i + 1]) {
                    ++r.new_flows;
                    if (j > 0) ++r.returning_flows;
                }
                const bool last = j + 1 == p.size() || p[j + 1] - p[j] > t;
                if (last && p[j] + t >= b[i] && p[j] + t < b[i + 1]) ++r.expired;
            }
            if (f.end != FlowEndFlag::none && p.back() >= b[i] && p.back() < b[i + 1]) ++r.ended;
        }
        out.push_back(r);
    }
    return out;
}

TEST(FlowTruth, MatchesPacketLevelBruteForceOnRandomFlows) {
    std::mt19937_64 rng(12345);  // the test's own randomness: any engine will do
    const std::int64_t gap_min = 40;
    for (int round = 0; round < 30; ++round) {
        std::vector<PacketFlow> flows(1 + rng() % 12);
        std::string text = "# gap_min_ns " + std::to_string(gap_min) +
                           "\nproto\tsrc\tdst\tsport\tdport\tpackets\tbytes\tfirst_ns\tlast_ns"
                           "\tend_flag\tpause_ns\tgaps\n";
        for (std::size_t f = 0; f < flows.size(); ++f) {
            std::int64_t now = static_cast<std::int64_t>(rng() % 400);
            const std::size_t packets = 1 + rng() % 8;
            std::string gaps;
            for (std::size_t j = 0; j < packets; ++j) {
                if (j > 0) {
                    const std::int64_t silence = static_cast<std::int64_t>(rng() % 120);
                    if (silence > gap_min) {
                        // Appends one by one: GCC 12 warns (-Wrestrict, a false
                        // positive) on "literal" + std::string at -O3.
                        if (!gaps.empty()) gaps += ',';
                        gaps += std::to_string(now);
                        gaps += ':';
                        gaps += std::to_string(now + silence);
                    }
                    now += silence;
                }
                flows[f].times.push_back(now);
            }
            flows[f].end = static_cast<FlowEndFlag>(rng() % 3);
            const char* end_names[] = {"-", "fin", "rst"};
            text += "6\tx\ty\t" + std::to_string(f) + "\t1\t" + std::to_string(packets) + "\t0\t" +
                    std::to_string(flows[f].times.front()) + "\t" +
                    std::to_string(flows[f].times.back()) + "\t" +
                    end_names[static_cast<int>(flows[f].end)] + "\t0\t" +
                    (gaps.empty() ? "-" : gaps) + "\n";
        }
        const LifetimeTruth truth = parse_lifetime_truth(text);
        std::vector<std::int64_t> b = {static_cast<std::int64_t>(rng() % 50)};
        while (b.back() < 1000) b.push_back(b.back() + 1 + static_cast<std::int64_t>(rng() % 90));
        for (const std::int64_t t : {gap_min, std::int64_t{41}, std::int64_t{60},
                                     std::int64_t{119}, std::int64_t{500}}) {
            const auto got = lifecycle_counts(truth, b, t);
            ASSERT_EQ(got, brute_force(flows, b, t)) << "round " << round << " T " << t;
            for (const auto& r : got) {
                EXPECT_EQ(r.active_at_end, r.active_at_start + r.new_flows - r.expired);
            }
        }
    }
}

}  // namespace
