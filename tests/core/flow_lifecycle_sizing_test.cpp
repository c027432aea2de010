#include "core/lifecycle/sizing.hpp"

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

#include "core/lifecycle/block_layout.hpp"

#include "lifecycle_test_config.hpp"
#include "test_keys.hpp"

namespace flowsketch::core {
namespace {

using testing::sec;

bool prime(std::uint64_t n) {
    if (n < 2) return false;
    for (std::uint64_t d = 2; d * d <= n; ++d) {
        if (n % d == 0) return false;
    }
    return true;
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

}  // namespace
}  // namespace flowsketch::core
