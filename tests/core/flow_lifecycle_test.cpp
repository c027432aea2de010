#include "core/lifecycle/flow_lifecycle.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numbers>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/sketch/random.hpp"
#include "test_keys.hpp"

namespace flowsketch::core {
namespace {

using testing::binomial_se;
using testing::key_hash;

constexpr std::int64_t sec = 1'000'000'000;

bool prime(std::uint64_t n) {
    if (n < 2) return false;
    for (std::uint64_t d = 2; d * d <= n; ++d) {
        if (n % d == 0) return false;
    }
    return true;
}

constexpr SeenFilterKind all_kinds[] = {SeenFilterKind::standard, SeenFilterKind::two_choice,
                                        SeenFilterKind::blocked};

FlowLifecycleConfig small_config(SeenFilterKind kind, std::uint64_t max_flows, double fpr) {
    FlowLifecycleConfig c;
    c.max_flows = max_flows;
    c.target_fpr = fpr;
    c.idle_timeout_ns = 60 * sec;
    c.generations = 4;
    c.kind = kind;
    c.seed = 7;
    return c;
}

// ---------------------------------------------------------------- sizing

TEST(FlowLifecycleSizing, FollowsDesignFormulas) {
    // k = ⌈log2(1/δ)⌉, m = smallest prime ≥ ⌈n·k/ln 2⌉ (DESIGN.md, Bloom sizing).
    EXPECT_EQ(FlowLifecycleConfig::probes_for(0.001), 10u);
    EXPECT_EQ(FlowLifecycleConfig::probes_for(0.01), 7u);
    EXPECT_EQ(FlowLifecycleConfig::probes_for(0.5), 1u);
    const double raw = std::ceil(1e6 * 10 / std::numbers::ln2);
    std::uint64_t expect = static_cast<std::uint64_t>(raw);
    while (!prime(expect)) ++expect;
    EXPECT_EQ(FlowLifecycleConfig::cells_for(1'000'000, 0.001), expect);

    FlowLifecycleConfig c;  // defaults: 1M flows, 0.001, 60 s, G = 8
    c.kind = SeenFilterKind::standard;
    const FlowLifecycleSizing s = c.sizing();
    EXPECT_EQ(s.cells, expect);
    EXPECT_EQ(s.k, 10u);
    EXPECT_NEAR(s.design_fill, 0.5, 1e-3);  // m = n·k/ln 2 ⇒ ρ = 1 − e^{−ln 2}
    EXPECT_LE(s.design_fpr, 0.001);
    // The seen filter's words, the ended filter's and its page map (a bit per 4 KiB).
    const std::uint64_t ended_words = (expect + 63) / 64;
    const std::uint64_t page_map_words = ((ended_words + 511) / 512 + 63) / 64;
    EXPECT_EQ(s.table_bytes, ((expect + 15) / 16 + ended_words + page_map_words) * 8);
    EXPECT_LT(s.table_bytes, 9'100'000u);  // ≈ 0.625 bytes per cell: 9 MB for 1M flows
    EXPECT_EQ(c.generation_period_ns(), 7'500'000'000);
    c.idle_timeout_ns = 10 * sec + 1;
    EXPECT_EQ(c.generation_period_ns(), 1'250'000'001);  // ⌈T/G⌉: G·P ≥ T

    // Two-choice: same memory, k minimising the Lumetta–Mitzenmacher prediction,
    // which at 14.4 cells per flow is ≈ 11% below the standard filter's 2^−10.
    FlowLifecycleConfig t;
    t.kind = SeenFilterKind::two_choice;
    const FlowLifecycleSizing st = t.sizing();
    EXPECT_EQ(st.cells, s.cells);
    EXPECT_GE(st.k, 11u);
    EXPECT_LE(st.k, 12u);
    EXPECT_LT(st.design_fpr, s.design_fpr);
}

// The blocked filter's rate against closed forms. With L ~ Poisson(λ) flows in
// a block of B cells and j its non-zero cells after k·L uniform probes,
// E[x^{k·L}] = e^{−λ(1 − x^k)}, so with s_i = e^{−λ(1 − (1 − i/B)^k)}:
//  k = 1: E[j/B] = 1 − s_1;
//  k = 2: E[(j/B)²] = (E[j] + E[j(j − 1)])/B², E[j] = B(1 − s_1),
//         E[j(j − 1)] = B(B − 1)(1 − 2·s_1 + s_2).
TEST(FlowLifecycleSizing, BlockedRateMatchesClosedForms) {
    const double b = lifecycle_block_cells;
    for (const double lambda : {0.01, 1.0, 9.0, 40.0, 300.0}) {
        const auto s = [&](std::uint32_t k, double i) {
            return std::exp(-lambda * (1.0 - std::pow(1.0 - i / b, k)));
        };
        EXPECT_NEAR(blocked_false_positive_rate(lambda, 1), 1.0 - s(1, 1), 1e-12) << lambda;
        const double pairs = b * (b - 1) * (1.0 - 2.0 * s(2, 1) + s(2, 2));
        const double expect2 = (b * (1.0 - s(2, 1)) + pairs) / (b * b);
        EXPECT_NEAR(blocked_false_positive_rate(lambda, 2), expect2, 1e-12 + 1e-9 * expect2)
            << lambda;
    }
    EXPECT_EQ(blocked_false_positive_rate(0.0, 8), 0.0);
}

// Blocked sizing: the fewest blocks of 128 cells that meet δ at n flows, over
// k near the standard one. At δ = 10⁻³ that is k = 8 and about 32% more cells
// than the standard filter (docs/flow-lifecycle.md, sizing table).
TEST(FlowLifecycleSizing, BlockedTakesTheFewestBlocksMeetingTheTarget) {
    FlowLifecycleConfig c;  // the default filter is blocked
    ASSERT_EQ(c.kind, SeenFilterKind::blocked);
    const FlowLifecycleSizing s = c.sizing();
    const double n = static_cast<double>(c.max_flows);
    ASSERT_EQ(s.cells % lifecycle_block_cells, 0u);
    const std::uint64_t blocks = s.cells / lifecycle_block_cells;
    EXPECT_EQ(s.k, 8u);
    EXPECT_LE(s.design_fpr, c.target_fpr);
    EXPECT_DOUBLE_EQ(s.design_fpr,
                     blocked_false_positive_rate(n / static_cast<double>(blocks), s.k));
    // One block fewer misses δ, with this k or any other.
    for (std::uint32_t k = 1; k <= 16; ++k) {
        EXPECT_GT(blocked_false_positive_rate(n / static_cast<double>(blocks - 1), k),
                  c.target_fpr)
            << k;
    }
    const double standard = static_cast<double>(FlowLifecycleConfig::cells_for(c.max_flows, 0.001));
    EXPECT_GT(static_cast<double>(s.cells), 1.25 * standard);
    EXPECT_LT(static_cast<double>(s.cells), 1.40 * standard);
    const std::uint64_t page_map_words = ((s.cells / 64 + 511) / 512 + 63) / 64;
    EXPECT_EQ(s.table_bytes, (s.cells / 16 + s.cells / 64 + page_map_words) * 8 + blocks);
    // Fill at the plan: 1 − e^{−λ·q}, q = 1 − (1 − 1/128)^k.
    const double q = 1.0 - std::pow(1.0 - 1.0 / 128.0, s.k);
    EXPECT_NEAR(s.design_fill, 1.0 - std::exp(-n / static_cast<double>(blocks) * q), 1e-12);

    // Tiny plans still get at least one block; other targets meet theirs.
    for (const double fpr : {0.5, 0.01, 1e-6}) {
        for (const std::uint64_t flows : {1ull, 100ull, 1'000'000ull}) {
            FlowLifecycleConfig t;
            t.max_flows = flows;
            t.target_fpr = fpr;
            const FlowLifecycleSizing st = t.sizing();
            EXPECT_GE(st.cells, lifecycle_block_cells);
            EXPECT_LE(st.design_fpr, fpr) << flows << " flows at " << fpr;
        }
    }
}

TEST(FlowLifecycleSizing, RejectsBadConfigurations) {
    auto bad = [](auto change) {
        FlowLifecycleConfig c;
        c.max_flows = 1000;
        change(c);
        EXPECT_THROW(FlowLifecycle{c}, std::invalid_argument);
    };
    bad([](FlowLifecycleConfig& c) { c.max_flows = 0; });
    bad([](FlowLifecycleConfig& c) { c.target_fpr = 0.0; });
    bad([](FlowLifecycleConfig& c) { c.target_fpr = 1.0; });
    bad([](FlowLifecycleConfig& c) { c.target_fpr = std::nan(""); });
    bad([](FlowLifecycleConfig& c) { c.generations = 0; });
    bad([](FlowLifecycleConfig& c) { c.generations = 15; });
    bad([](FlowLifecycleConfig& c) { c.idle_timeout_ns = 0; });
    bad([](FlowLifecycleConfig& c) { c.idle_timeout_ns = -5; });
    bad([](FlowLifecycleConfig& c) { c.overfill_factor = 0.5; });
    bad([](FlowLifecycleConfig& c) { c.kind = static_cast<SeenFilterKind>(9); });
    bad([](FlowLifecycleConfig& c) { c.max_flows = std::uint64_t{1} << 40; });
    FlowLifecycleConfig ok;
    ok.max_flows = 1000;
    ok.generations = 14;
    EXPECT_NO_THROW(FlowLifecycle{ok});
}

// ------------------------------------------------------- expiry precision

// Bounds: a flow with a packet at t_l is active at t_l + T (no false
// negatives within the timeout) and expired by t_l + (G + 1)·P, P = ⌈T/G⌉
// (= T + T/G when G divides T). With one flow
// in a large filter a false positive is impossible in practice (f ≈ 10⁻³⁰).
TEST(FlowLifecycle, ExpiresBetweenTimeoutAndOneGenerationLater) {
    for (const SeenFilterKind kind : all_kinds) {
        for (const std::int64_t timeout : {60 * sec, 10 * sec + 7}) {
            for (const std::uint32_t g : {1u, 4u, 14u}) {
                FlowLifecycleConfig c = small_config(kind, 1000, 0.001);
                c.idle_timeout_ns = timeout;
                c.generations = g;
                const std::int64_t p = c.generation_period_ns();
                ASSERT_GE(p * g, timeout);
                for (std::int64_t offset = 0; offset < 2 * p; offset += p / 4 + 1) {
                    FlowLifecycle life(c);
                    life.observe(key_hash(0, 99), 1000, 0);  // starts the clock at 1000 ns
                    const Hash128 x = key_hash(static_cast<std::uint64_t>(offset), 1);
                    const std::int64_t t_last = 1000 + offset;
                    EXPECT_TRUE(life.observe(x, t_last, 0));
                    EXPECT_FALSE(life.observe(x, t_last, 0));
                    life.advance_to(t_last + timeout);
                    EXPECT_TRUE(life.contains(x)) << "offset " << offset << " G " << g;
                    life.advance_to(t_last + timeout - 1 + p);  // still within (G + 1)·P
                    life.advance_to(t_last + (g + 1) * p);
                    EXPECT_FALSE(life.contains(x)) << "offset " << offset << " G " << g;
                    EXPECT_TRUE(life.observe(x, t_last + (g + 1) * p, 0));  // new again
                }
            }
        }
    }
}

TEST(FlowLifecycle, TimeNeverRunsBackwardsAndJumpsAreBounded) {
    FlowLifecycleConfig c = small_config(SeenFilterKind::standard, 1000, 0.001);
    FlowLifecycle life(c);
    const std::int64_t p = life.generation_period_ns();
    EXPECT_TRUE(life.observe(key_hash(1), 100 * sec, 0));
    // Backwards: treated as the current generation; nothing rotates or expires.
    EXPECT_TRUE(life.observe(key_hash(2), 5 * sec, 0));
    EXPECT_TRUE(life.observe(key_hash(3), -1'000'000 * sec, 0));
    life.advance_to(std::numeric_limits<std::int64_t>::min());
    EXPECT_EQ(life.interval_counts().generations_advanced, 0u);
    EXPECT_EQ(life.cell_passes(), 0u);
    EXPECT_TRUE(life.contains(key_hash(2)));
    EXPECT_FALSE(life.observe(key_hash(3), 100 * sec, 0));

    // G boundaries: the flows are still live (window = G + 1 generations), and
    // no pass was made: the stamps that left belong to generations before the first packet.
    life.advance_to(100 * sec + 4 * p);
    EXPECT_EQ(life.cell_passes(), 0u);
    EXPECT_TRUE(life.contains(key_hash(1)));
    // Ten years ahead: one pass clears everything, whatever the number of boundaries.
    const std::int64_t years = 10LL * 365 * 24 * 3600 * sec;
    life.advance_to(100 * sec + years);
    EXPECT_EQ(life.cell_passes(), 1u);
    const FlowCounts after = life.interval_counts();
    EXPECT_GT(after.generations_advanced, 1'000'000u);
    EXPECT_NEAR(after.expired, 3.0, 0.01);
    EXPECT_EQ(after.active, 0.0);
    EXPECT_FALSE(life.contains(key_hash(1)));
    EXPECT_TRUE(life.observe(key_hash(1), 100 * sec + years + 1, 0));
    // The extremes of the clock: no overflow, no crash.
    life.observe(key_hash(4), std::numeric_limits<std::int64_t>::max(), 0);
    life.observe(key_hash(5), std::numeric_limits<std::int64_t>::max(), 0);
    life.advance_to(std::numeric_limits<std::int64_t>::max());
    EXPECT_TRUE(life.contains(key_hash(5)));
    EXPECT_LE(life.cell_passes(), 2u);
}

// A generation turn passes over the cells only when the generation leaving the
// window wrote some; the answers are those of passing every time: flows expire
// when their generation leaves, with the same counts.
TEST(FlowLifecycle, GenerationTurnsPassOnlyForGenerationsThatWrote) {
    for (const SeenFilterKind kind :
         {SeenFilterKind::standard, SeenFilterKind::two_choice, SeenFilterKind::blocked}) {
        SCOPED_TRACE(seen_filter_kind_name(kind));
        FlowLifecycle life(small_config(kind, 10'000, 0.001));
        const std::int64_t p = life.generation_period_ns();
        const std::int64_t t0 = 1000 * sec;
        // 300 flows in generation 0, none in 1, 200 in 2.
        for (std::uint64_t i = 0; i < 300; ++i) life.observe(key_hash(i, 5), t0, 0);
        life.advance_to(t0 + 2 * p);
        for (std::uint64_t i = 300; i < 500; ++i) life.observe(key_hash(i, 5), t0 + 2 * p, 0);
        // Boundaries 3 and 4: the generations leaving began before the first packet.
        life.advance_to(t0 + 4 * p);
        EXPECT_EQ(life.cell_passes(), 0u);
        EXPECT_EQ(life.interval_counts().expired, 0.0);
        // Boundary 5: generation 0 leaves, one pass, its 300 flows expire.
        life.advance_to(t0 + 5 * p);
        EXPECT_EQ(life.cell_passes(), 1u);
        EXPECT_NEAR(life.interval_counts().expired, 300.0, 15.0);
        EXPECT_FALSE(life.contains(key_hash(0, 5)));
        EXPECT_TRUE(life.contains(key_hash(300, 5)));
        // Boundary 6: generation 1 wrote nothing, no pass; boundary 7: generation 2 leaves.
        life.advance_to(t0 + 6 * p);
        EXPECT_EQ(life.cell_passes(), 1u);
        life.advance_to(t0 + 7 * p);
        EXPECT_EQ(life.cell_passes(), 2u);
        const FlowCounts c = life.interval_counts();
        EXPECT_NEAR(c.expired, 500.0, 25.0);
        EXPECT_EQ(c.active, 0.0);
        EXPECT_FALSE(life.contains(key_hash(300, 5)));
        // A stamp comes round again (15 values): written anew, it is cleared anew.
        for (std::int64_t g = 8; g < 40; ++g) {
            life.observe(key_hash(1000 + static_cast<std::uint64_t>(g), 5), t0 + g * p, 0);
            life.advance_to(t0 + (g + 1) * p);
            // Live now: generations g − 3 .. g + 1 (flows from generation 8 on).
            if (g < 12) continue;
            EXPECT_TRUE(life.contains(key_hash(1000 + static_cast<std::uint64_t>(g) - 3, 5))) << g;
            EXPECT_FALSE(life.contains(key_hash(1000 + static_cast<std::uint64_t>(g) - 4, 5))) << g;
        }
        EXPECT_NEAR(life.interval_counts().active, 4.0, 0.5);
    }
}

// ---------------------------------------------------------------- ended

// Bounds: ended counts distinct flows with FIN or RST in the interval; a FIN
// retransmission or FIN then RST of one flow counts once; the count is never
// above the truth and below it by at most ended_undercount_bound.
void ended_counts_distinct_flows_once_per_interval(SeenFilterKind kind) {
    FlowLifecycle life(small_config(kind, 10'000, 0.001));
    for (std::uint64_t i = 0; i < 1000; ++i) {
        life.observe(key_hash(i, 3), sec, 0x10);                      // ACK
        life.observe(key_hash(i, 3), sec, i % 2 == 0 ? tcp_fin : tcp_rst);
        life.observe(key_hash(i, 3), sec, tcp_fin | 0x10);            // retransmit
        life.observe(key_hash(i, 3), sec, tcp_rst);
    }
    FlowCounts c = life.interval_counts();
    EXPECT_LE(c.ended, 1000u);
    EXPECT_LE(1000 - c.ended, c.ended_undercount_bound);
    EXPECT_GE(c.ended, 998u);  // f_ended ≈ (1000·k/m)^k ≈ 10⁻¹⁰: no miss expected
    EXPECT_EQ(c.new_flows, 1000u);
    // The next interval starts with an empty ended filter: every flow ends anew
    // (its bits span many of the filter's pages, all of which must be cleared).
    life.start_new_interval();
    for (std::uint64_t i = 0; i < 1000; ++i) life.observe(key_hash(i, 3), 2 * sec, tcp_fin);
    c = life.interval_counts();
    EXPECT_LE(c.ended, 1000u);
    EXPECT_GE(c.ended, 998u);
    EXPECT_EQ(c.new_flows, 0u);
    EXPECT_EQ(c.packets, 1000u);
}

TEST(FlowLifecycle, EndedCountsDistinctFlowsOncePerInterval) {
    for (const SeenFilterKind kind : {SeenFilterKind::standard, SeenFilterKind::blocked}) {
        SCOPED_TRACE(seen_filter_kind_name(kind));
        ended_counts_distinct_flows_once_per_interval(kind);
    }
}

// Bound, and its tightness: the ended filter fills as an interval goes on, so
// an end counted early was missed with the small rate of its time, not the
// rate at the query. 6,000 distinct ends into a filter planned for 2,000 (its
// rate climbs from 0 to about 0.4): the bound holds the misses, and stays
// within 1.5× of them plus the Bernstein deviation's scale (669 for 459
// missed, blocked). Charging every end the final rate, as before, gave 5-7×
// the misses (2,613 for 459).
TEST(FlowLifecycle, EndedBoundChargesEachEndTheRateOfItsTime) {
    for (const SeenFilterKind kind : all_kinds) {
        SCOPED_TRACE(seen_filter_kind_name(kind));
        FlowLifecycle life(small_config(kind, 2'000, 0.01));
        const std::uint64_t ends = 6'000;
        for (std::uint64_t i = 0; i < ends; ++i) life.observe(key_hash(i, 21), sec, tcp_rst);
        const FlowCounts c = life.interval_counts();
        ASSERT_LE(c.ended, ends);
        const double missed = static_cast<double>(ends - c.ended);
        EXPECT_GT(missed, 300.0) << "the scenario must overfill the ended filter";
        EXPECT_LE(missed, c.ended_undercount_bound);
        EXPECT_LE(c.ended_undercount_bound, 1.5 * missed + 150.0)
            << "ended " << c.ended << ", bound " << c.ended_undercount_bound;
    }
}

// ------------------------------------------------------------------ fpr

// Bound: the observed false-positive rate over fresh keys is within 3 binomial
// standard errors of the formula from the fill: ρ^k (standard),
// 1 − (1 − ρ^k)² (two-choice). Loads 0.5, 1 and 2 times the plan.
TEST(FlowLifecycle, FalsePositiveRateMatchesFillFormula) {
    for (const SeenFilterKind kind : all_kinds) {
        for (const double load : {0.5, 1.0, 2.0}) {
            const std::uint64_t plan = 20'000;
            FlowLifecycle life(small_config(kind, plan, 0.01));
            const auto n = static_cast<std::uint64_t>(load * static_cast<double>(plan));
            for (std::uint64_t i = 0; i < n; ++i) life.observe(key_hash(i, 10), sec, 0);
            const FlowCounts c = life.interval_counts();
            const std::uint64_t trials = 200'000;
            std::uint64_t positives = 0;
            for (std::uint64_t i = 0; i < trials; ++i) {
                positives += life.contains(key_hash(i, 11)) ? 1u : 0u;
            }
            const double observed = static_cast<double>(positives) / static_cast<double>(trials);
            const double se = binomial_se(c.fpr, static_cast<double>(trials));
            {
                EXPECT_NEAR(observed, c.fpr, 3 * se)
                    << seen_filter_kind_name(kind) << " load " << load;
            }
            if (load == 1.0) {
                // At the plan the fill and the rate are what sizing predicted.
                EXPECT_LT(c.fpr, 0.01 * 1.1) << seen_filter_kind_name(kind);
                EXPECT_FALSE(c.overfilled);
            }
            if (load == 2.0) {
                EXPECT_TRUE(c.overfilled);
            }
        }
    }
}

// The same after generations turn over: the reported rate follows the cells
// the boundary passes cleared (for blocked, the fill counts they recount).
// Twice the plan enters, then half of it again two generations later; once
// the first wave has left the window, fresh keys see only the second.
TEST(FlowLifecycle, FalsePositiveRateFollowsExpiry) {
    for (const SeenFilterKind kind : all_kinds) {
        const std::uint64_t plan = 20'000;
        FlowLifecycle life(small_config(kind, plan, 0.01));
        const std::int64_t p = life.generation_period_ns();
        for (std::uint64_t i = 0; i < 2 * plan; ++i) life.observe(key_hash(i, 12), sec, 0);
        const double full = life.interval_counts().fpr;
        for (std::uint64_t i = 0; i < plan / 2; ++i) life.observe(key_hash(i, 13), sec + 2 * p, 0);
        life.advance_to(sec + 5 * p);  // the first wave's generation leaves (G = 4)
        const FlowCounts c = life.interval_counts();
        EXPECT_LT(c.fpr, full / 100) << seen_filter_kind_name(kind);
        const std::uint64_t trials = 400'000;
        std::uint64_t positives = 0;
        for (std::uint64_t i = 0; i < trials; ++i) {
            positives += life.contains(key_hash(i, 14)) ? 1u : 0u;
        }
        const double observed = static_cast<double>(positives) / static_cast<double>(trials);
        EXPECT_NEAR(observed, c.fpr, 3 * binomial_se(c.fpr, static_cast<double>(trials)))
            << seen_filter_kind_name(kind);
        EXPECT_GT(positives, 0u) << "the check needs a measurable rate";
    }
}

// ------------------------------------------------------ active variance

// Bound: active_stderr is the real spread of n̂. n flows go into 400
// independent filters (fresh keys and probe seeds each); the sample variance
// of n̂ over the filters must match the mean stated variance within ±20% (the
// sampling error of a variance from 400 draws is ±7%) and the mean of n̂ the
// truth within 4 standard errors of the mean. Without the block-load term the
// blocked filter's stated variance is 35%, 18% and 11% too small at these
// loads (the first fails the check).
TEST(FlowLifecycle, ActiveStandardErrorIsTheRealSpread) {
    for (const SeenFilterKind kind : {SeenFilterKind::standard, SeenFilterKind::blocked}) {
        for (const double load : {0.5, 1.0, 3.0}) {
            const std::uint64_t plan = 2'000;
            const auto n = static_cast<std::uint64_t>(load * static_cast<double>(plan));
            const int filters = 400;
            double sum = 0, squares = 0, stated = 0;
            for (int r = 0; r < filters; ++r) {
                FlowLifecycleConfig c = small_config(kind, plan, 0.01);
                c.seed = static_cast<std::uint64_t>(r) + 1;
                FlowLifecycle life(c);
                for (std::uint64_t i = 0; i < n; ++i) {
                    life.observe(key_hash(i, 1000 + static_cast<std::uint64_t>(r)), sec, 0);
                }
                const FlowCounts got = life.interval_counts();
                sum += got.active;
                squares += got.active * got.active;
                stated += got.active_stderr * got.active_stderr;
            }
            const double mean = sum / filters;
            const double variance = (squares - filters * mean * mean) / (filters - 1);
            stated /= filters;
            SCOPED_TRACE(::testing::Message() << seen_filter_kind_name(kind) << " load " << load);
            std::printf("%s load %.1f: sample variance %.1f, stated %.1f, mean %.1f of %llu\n",
                        seen_filter_kind_name(kind).data(), load, variance, stated, mean,
                        static_cast<unsigned long long>(n));
            EXPECT_GT(variance / stated, 0.8);
            EXPECT_LT(variance / stated, 1.25);
            EXPECT_NEAR(mean, static_cast<double>(n), 4 * std::sqrt(stated / filters));
        }
    }
}

// ------------------------------------------------- against a reference model

struct Event {
    std::int64_t t;
    std::uint64_t flow;
    std::uint8_t flags;
};

// Flows start uniformly over [0, horizon); gaps between packets are short
// (< T), around the timeout (T − 5 s .. T + P + 5 s, so both sides of the
// expiry window occur) or long (≫ T, so flows come back as new); each packet
// ends the flow with probability 6% (then with FIN, sometimes FIN twice, or RST).
std::vector<Event> synthetic_stream(std::uint64_t flows, std::int64_t horizon, std::int64_t timeout,
                                    std::int64_t period, std::uint64_t seed) {
    Xoshiro256 rng(seed);
    std::vector<Event> events;
    for (std::uint64_t f = 0; f < flows; ++f) {
        auto t = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(horizon)));
        while (t < horizon) {
            const double u = rng.uniform();
            if (u < 0.06) {
                const std::uint8_t flags = rng.uniform() < 0.7 ? tcp_fin : tcp_rst;
                events.push_back({t, f, flags});
                if (rng.uniform() < 0.3) events.push_back({t + sec / 10, f, tcp_fin});
                break;
            }
            events.push_back({t, f, 0x10});
            std::int64_t gap = 0;
            const double v = rng.uniform();
            if (v < 0.8) {
                gap = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(timeout / 2)));
            } else if (v < 0.9) {
                gap = timeout - 5 * sec +
                      static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(period + 10 * sec)));
            } else {
                gap = 2 * timeout + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(4 * timeout)));
            }
            t += gap;
        }
    }
    std::sort(events.begin(), events.end(),
              [](const Event& a, const Event& b) { return a.t != b.t ? a.t < b.t : a.flow < b.flow; });
    return events;
}

struct Truth {
    std::uint64_t new_flows = 0;
    std::uint64_t expired = 0;
    std::uint64_t active = 0;
    std::uint64_t ended = 0;
};

// Exact model with the design's generation semantics: generation(t) =
// ⌊(t − t0)/P⌋, a flow is active while generation(now) − generation(last) ≤ G
// and expires at the boundary of generation(last) + G + 1.
class Reference {
public:
    Reference(std::int64_t period, std::uint32_t g) : period_(period), g_(g) {}
    std::int64_t generation(std::int64_t t) const { return (std::max(t, t0_) - t0_) / period_; }

    void packet(const Event& e) {
        if (!started_) {
            started_ = true;
            t0_ = e.t;
        }
        const std::int64_t now = generation(e.t);
        const auto it = last_.find(e.flow);
        if (it == last_.end()) {
            ++truth_.new_flows;
        } else if (now - it->second > g_) {
            ++truth_.new_flows;
            const std::int64_t boundary = it->second + g_ + 1;
            if (boundary > interval_start_gen_) ++truth_.expired;  // expired in this interval
        }
        last_[e.flow] = now;
        if ((e.flags & (tcp_fin | tcp_rst)) != 0) ended_.insert(e.flow);
    }

    Truth close(std::int64_t t) {
        const std::int64_t now = generation(t);
        Truth out = truth_;
        out.ended = ended_.size();
        for (const auto& [flow, last] : last_) {
            const std::int64_t boundary = last + g_ + 1;
            if (boundary > interval_start_gen_ && boundary <= now) ++out.expired;
            if (now - last <= g_) ++out.active;
        }
        truth_ = Truth{};
        ended_.clear();
        interval_start_gen_ = now;
        return out;
    }

private:
    std::int64_t period_;
    std::int64_t g_;
    bool started_ = false;
    std::int64_t t0_ = 0;
    std::int64_t interval_start_gen_ = 0;
    std::unordered_map<std::uint64_t, std::int64_t> last_;
    std::unordered_set<std::uint64_t> ended_;
    Truth truth_;
};

struct StreamResult {
    std::vector<double> active_z;   // (estimate − truth)/stderr per interval with flows
    std::vector<double> expired_z;
    std::uint64_t total_new = 0;
    std::uint64_t total_truth_new = 0;
};

StreamResult run_stream(SeenFilterKind kind, std::uint64_t max_flows, double fpr,
                        std::uint64_t keys) {
    FlowLifecycleConfig c = small_config(kind, max_flows, fpr);
    FlowLifecycle life(c);
    const std::int64_t p = life.generation_period_ns();
    const std::int64_t horizon = 600 * sec;
    const std::int64_t interval = 20 * sec;
    const auto events = synthetic_stream(20'000, horizon, c.idle_timeout_ns, p, 1234);
    Reference ref(p, c.generations);
    StreamResult result;
    std::size_t next = 0;
    for (std::int64_t end = interval; end <= horizon + 3 * c.idle_timeout_ns; end += interval) {
        for (; next < events.size() && events[next].t < end; ++next) {
            const Event& e = events[next];
            life.observe(key_hash(e.flow, keys), e.t, e.flags);
            ref.packet(e);
        }
        life.advance_to(end);
        const Truth truth = ref.close(end);
        const FlowCounts got = life.interval_counts();
        life.start_new_interval();
        SCOPED_TRACE(::testing::Message() << seen_filter_kind_name(kind) << " interval ending "
                                          << end / sec << " s");
        // new: a false positive can only hide a new flow — never above the truth,
        // below it by at most the stated bound.
        EXPECT_LE(got.new_flows, truth.new_flows);
        EXPECT_LE(static_cast<double>(truth.new_flows - std::min(truth.new_flows, got.new_flows)),
                  got.new_undercount_bound);
        EXPECT_LE(got.ended, truth.ended);
        EXPECT_LE(static_cast<double>(truth.ended - std::min(truth.ended, got.ended)),
                  got.ended_undercount_bound);
        result.total_new += got.new_flows;
        result.total_truth_new += truth.new_flows;
        const double active_truth = static_cast<double>(truth.active);
        const double expired_truth = static_cast<double>(truth.expired);
        if (std::getenv("LIFECYCLE_TRACE") != nullptr) {  // for studying the estimators
            std::printf("%lld s: active %.1f truth %.0f se %.1f [%.0f, %.0f] | expired %.1f truth %.0f "
                        "se %.1f\n",
                        static_cast<long long>(end / sec), got.active, active_truth, got.active_stderr,
                        got.active_lower, got.active_upper, got.expired, expired_truth,
                        got.expired_stderr);
        }
        if (kind != SeenFilterKind::two_choice) {
            // Estimates with no error stated must be exact (no flows: 0 = 0).
            if (got.active_stderr == 0) {
                EXPECT_EQ(got.active, active_truth);
            }
            if (got.expired_stderr == 0) {
                EXPECT_EQ(got.expired, expired_truth);
            }
            if (got.active_stderr > 0) {
                result.active_z.push_back((got.active - active_truth) / got.active_stderr);
            }
            if (got.expired_stderr > 0) {
                result.expired_z.push_back((got.expired - expired_truth) / got.expired_stderr);
            }
        } else {
            // two-choice tokens: the truth lies in [tokens, tokens + deficit bound].
            EXPECT_GE(active_truth, got.active_lower);
            EXPECT_LE(active_truth, got.active_upper);
            EXPECT_NEAR(got.expired, expired_truth,
                        got.expired_stderr * got.expired_stderr +
                            4 * got.expired_stderr + 5);
        }
        EXPECT_FALSE(got.overfilled);
    }
    return result;
}

// Bounds, per interval of every stream: new and ended never above the truth
// and below it by at most their stated bounds (hard checks inside run_stream).
// Active and expired are estimates with standard errors; a single path's
// intervals are strongly correlated (the same flows persist), so "within 3
// standard errors" is tested where it means something: over 12 independent
// streams (≈ 400 intervals with flows) the z-scores (estimate − truth)/stderr
// have |mean| ≤ 0.3, root mean square ≤ 1.3 (the stated error is the real
// one, neither loose nor tight), at most 2% beyond 3 (0.27% expected for a
// normal; the allowance covers the clumping of correlated intervals), and none
// beyond 4.5. (30 streams: rms 0.97 active, 1.02 expired, 2 of 2,820 beyond 3.)
class EstimatorMatchesReferenceModel : public ::testing::TestWithParam<SeenFilterKind> {};

TEST_P(EstimatorMatchesReferenceModel, OverIndependentStreams) {
    // ≈ 3,000–8,000 concurrently active flows against a plan of 10,000 at 1%.
    std::vector<double> active_z;
    std::vector<double> expired_z;
    for (std::uint64_t keys = 20; keys < 32; ++keys) {
        const StreamResult r = run_stream(GetParam(), 10'000, 0.01, keys);
        EXPECT_GT(r.total_truth_new, 15'000u);
        active_z.insert(active_z.end(), r.active_z.begin(), r.active_z.end());
        expired_z.insert(expired_z.end(), r.expired_z.begin(), r.expired_z.end());
    }
    for (const auto* z : {&active_z, &expired_z}) {
        const char* what = z == &active_z ? "active" : "expired";
        ASSERT_GT(z->size(), 200u);
        double sum = 0, squares = 0, largest = 0;
        std::size_t beyond3 = 0;
        for (const double v : *z) {
            sum += v;
            squares += v * v;
            largest = std::max(largest, std::abs(v));
            beyond3 += std::abs(v) > 3 ? 1u : 0u;
        }
        const double n = static_cast<double>(z->size());
        std::printf("%s %s: %zu intervals, mean z %.3f, rms z %.3f, max |z| %.2f, beyond 3: %zu\n",
                    seen_filter_kind_name(GetParam()).data(), what, z->size(), sum / n, std::sqrt(squares / n), largest, beyond3);
        EXPECT_LE(std::abs(sum / n), 0.3) << what;
        EXPECT_LE(std::sqrt(squares / n), 1.3) << what;
        EXPECT_LE(static_cast<double>(beyond3), 0.02 * n) << what;
        EXPECT_LE(largest, 4.5) << what;
    }
}

// Standard and blocked answer active and expired with n̂ and its variance formula.
INSTANTIATE_TEST_SUITE_P(FlowLifecycle, EstimatorMatchesReferenceModel,
                         ::testing::Values(SeenFilterKind::standard, SeenFilterKind::blocked),
                         [](const auto& param_info) {
                             return std::string(seen_filter_kind_name(param_info.param));
                         });

TEST(FlowLifecycle, TwoChoiceMatchesReferenceModel) {
    const StreamResult r = run_stream(SeenFilterKind::two_choice, 10'000, 0.01, 20);
    EXPECT_GT(r.total_truth_new, 20'000u);
    std::printf("two-choice: new %llu of %llu\n", static_cast<unsigned long long>(r.total_new),
                static_cast<unsigned long long>(r.total_truth_new));
}

// The table of recently refreshed flows only skips packets that would change
// nothing: with and without it, every count of every interval is identical,
// for both filters, with FIN/RST, generation boundaries, far more flows than
// table slots (so slots are shared and overwritten) and time jumps.
TEST(FlowLifecycle, RecentFlowTableChangesNoAnswer) {
    for (const SeenFilterKind kind : all_kinds) {
        FlowLifecycleConfig with_table = small_config(kind, 10'000, 0.01);
        FlowLifecycleConfig without_table = with_table;
        without_table.recent_flow_table = false;
        FlowLifecycle a(with_table);
        FlowLifecycle b(without_table);
        EXPECT_GT(a.memory_bytes(), b.memory_bytes());
        const std::int64_t p = a.generation_period_ns();
        const auto events = synthetic_stream(50'000, 300 * sec, with_table.idle_timeout_ns, p, 99);
        std::size_t next = 0;
        std::uint64_t intervals = 0;
        for (std::int64_t end = 7 * sec; next < events.size(); end += 7 * sec) {
            for (; next < events.size() && events[next].t < end; ++next) {
                const Event& e = events[next];
                const Hash128 hash = key_hash(e.flow, 5);
                ASSERT_EQ(a.observe(hash, e.t, e.flags), b.observe(hash, e.t, e.flags));
                // Repeats within the generation: the packets the table answers.
                ASSERT_EQ(a.observe(hash, e.t, 0), b.observe(hash, e.t, 0));
            }
            a.advance_to(end);
            b.advance_to(end);
            const FlowCounts x = a.interval_counts();
            const FlowCounts y = b.interval_counts();
            EXPECT_EQ(x.packets, y.packets);
            EXPECT_EQ(x.new_flows, y.new_flows);
            EXPECT_EQ(x.new_undercount_bound, y.new_undercount_bound);
            EXPECT_EQ(x.active, y.active);
            EXPECT_EQ(x.active_lower, y.active_lower);
            EXPECT_EQ(x.active_upper, y.active_upper);
            EXPECT_EQ(x.expired, y.expired);
            EXPECT_EQ(x.expired_stderr, y.expired_stderr);
            EXPECT_EQ(x.ended, y.ended);
            EXPECT_EQ(x.fill, y.fill);
            EXPECT_EQ(x.max_fpr, y.max_fpr);
            a.start_new_interval();
            b.start_new_interval();
            ++intervals;
        }
        EXPECT_GT(intervals, 30u);
    }
}

// ---------------------------------------------------------------- flood

// Two-choice's active estimate is tokens plus the expected misses; over many
// draws of an overfilled filter (5x the plan, f ≈ 0.7), its error in units of
// its standard error must look like a standard normal: no bias (the misses'
// expectation follows the fpr as the fill rises) and the right spread (the
// misses behind a detection are geometric, variance r(1 + r), not r).
TEST(FlowLifecycle, TwoChoiceOverfilledEstimateIsCalibrated) {
    constexpr int draws = 48;
    constexpr std::uint64_t flood = 20'000;
    double sum = 0;
    double sum_squares = 0;
    for (int draw = 0; draw < draws; ++draw) {
        FlowLifecycleConfig config = small_config(SeenFilterKind::two_choice, flood / 5, 0.001);
        config.seed = 100 + static_cast<std::uint64_t>(draw);
        FlowLifecycle life(config);
        for (std::uint64_t i = 0; i < flood; ++i) {
            life.observe(key_hash(i, 200 + static_cast<std::uint64_t>(draw)),
                         sec + static_cast<std::int64_t>(i), 0x02);
        }
        const FlowCounts c = life.interval_counts();
        ASSERT_TRUE(c.overfilled);
        ASSERT_GT(c.active_stderr, 0.0);
        const double z = (c.active - static_cast<double>(flood)) / c.active_stderr;
        sum += z;
        sum_squares += z * z;
    }
    const double mean = sum / draws;
    const double variance = sum_squares / draws - mean * mean;
    std::printf("z mean %.3f variance %.3f\n", mean, variance);
    // The mean of 48 standard normals has sd 0.14; their variance, sd ≈ 0.2.
    EXPECT_LT(std::abs(mean), 0.5);
    EXPECT_GT(variance, 0.5);
    EXPECT_LT(variance, 1.5);
}

// The DESIGN.md flood (5M distinct flows into a filter planned for 1M) at one
// fifth of the scale, same ratio, so the test stays fast under ASan: 1M
// distinct flows into a filter planned for 200k. Memory is unchanged, the
// report warns, the new-flow count stays within its (now wide) bound and the
// active estimate within 3 standard errors.
TEST(FlowLifecycle, FloodKeepsMemoryAndWarns) {
    for (const SeenFilterKind kind : all_kinds) {
        FlowLifecycle life(small_config(kind, 200'000, 0.001));
        const std::size_t before = life.memory_bytes();
        const std::uint64_t flood = 1'000'000;
        std::uint64_t reported_new = 0;
        for (std::uint64_t i = 0; i < flood; ++i) {
            reported_new += life.observe(key_hash(i, 30), sec + static_cast<std::int64_t>(i), 0x02)
                                ? 1u
                                : 0u;
        }
        EXPECT_EQ(life.memory_bytes(), before);
        const FlowCounts c = life.interval_counts();
        SCOPED_TRACE(seen_filter_kind_name(kind));
        EXPECT_TRUE(c.overfilled);
        EXPECT_GT(c.fpr, 100 * c.target_fpr);
        EXPECT_EQ(c.new_flows, reported_new);
        EXPECT_LE(c.new_flows, flood);
        EXPECT_LE(static_cast<double>(flood - c.new_flows), c.new_undercount_bound);
        // One draw: 4 standard errors (a false alarm once in 16,000 seeds).
        // Two-choice's estimate once overshot by 1.7x here (misses counted at
        // the end-of-generation fpr) with a standard error of 0.06%.
        EXPECT_NEAR(c.active, static_cast<double>(flood), 4 * c.active_stderr);
        if (kind == SeenFilterKind::two_choice) {
            EXPECT_GE(static_cast<double>(flood), c.active_lower);
            EXPECT_LE(static_cast<double>(flood), c.active_upper);
        }
        // The flood leaves: after the timeout the filter is empty and healthy again.
        life.start_new_interval();
        life.advance_to(sec + 200 * sec);
        const FlowCounts later = life.interval_counts();
        EXPECT_EQ(later.fill, 0.0);
        EXPECT_EQ(life.memory_bytes(), before);
        life.start_new_interval();
        EXPECT_FALSE(life.interval_counts().overfilled);
    }
}

}  // namespace
}  // namespace flowsketch::core
