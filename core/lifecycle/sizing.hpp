// How a flow lifecycle is configured and what that configuration costs: the
// seen filter's cells m and probes k for a target false-positive rate (the
// blocked filter's by an exact search), and the bytes its tables take.
// Derivations: docs/flow-lifecycle.md, "Sizing" and "blocked filter".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace flowsketch::core {

enum class SeenFilterKind : std::uint8_t { standard = 0, two_choice = 1, blocked = 2 };

std::string_view seen_filter_kind_name(SeenFilterKind kind) noexcept;

/// Largest G: the live window holds G + 1 stamps and a 4-bit cell has 15 non-zero values.
inline constexpr std::uint32_t max_lifecycle_generations = 14;

/// Blocked filter, false-positive rate of a fresh key when flows fall into
/// blocks as a Poisson process of `flows_per_block` per block: E[(j/128)^k]
/// with j the non-zero cells of a block, from the exact occupancy
/// distribution of k·L probes per block of L flows, mixed over L.
double blocked_false_positive_rate(double flows_per_block, std::uint32_t k);

/// What a configuration costs and promises at its design load.
struct FlowLifecycleSizing {
    std::uint64_t cells = 0;      ///< m: prime ≥ ⌈n·k_std / ln 2⌉, or (blocked) 128·blocks
    std::uint32_t k = 0;          ///< probes per group
    double design_fill = 0;       ///< predicted ρ with max_flows active
    double design_fpr = 0;        ///< predicted false-positive rate at that fill
    std::size_t table_bytes = 0;  ///< m/2 (4-bit cells) + m/8 (ended filter), rounded to
                                  ///< words; blocked + m/128 (a fill count per block)
};

struct FlowLifecycleConfig {
    std::uint64_t max_flows = 1'000'000;            ///< n: concurrently active flows planned
    double target_fpr = 0.001;                      ///< δ: "already seen" false-positive rate at n
    std::int64_t idle_timeout_ns = 60'000'000'000;  ///< T
    std::uint32_t generations = 8;                  ///< G, 1..14: expiry precision is T/G
    SeenFilterKind kind = SeenFilterKind::blocked;
    std::uint64_t seed = 0;        ///< perturbs the probe positions
    double overfill_factor = 2.0;  ///< warn when fpr > factor·δ
    /// Answer repeat packets of a flow within a generation from a small table
    /// of recently refreshed flows (exact; off only to measure or test it).
    bool recent_flow_table = true;

    /// k = ⌈log2(1/δ)⌉ (DESIGN.md, Bloom sizing). Throws unless 0 < δ < 1 and k ≤ 64.
    static std::uint32_t probes_for(double target_fpr);
    /// m = smallest prime ≥ ⌈n·k / ln 2⌉ with k = probes_for(δ): the DESIGN.md size,
    /// made prime so double hashing needs no division and the k probes are distinct.
    static std::uint64_t cells_for(std::uint64_t max_flows, double target_fpr);
    /// Validates and sizes. Standard: (m, k) as above, ρ = 1 − (1 − k/m)^n ≈ 1/2,
    /// f = ρ^k ≤ δ. Two-choice: the same m (same memory), k chosen to minimise
    /// the Lumetta–Mitzenmacher prediction 1 − (1 − z^k)² with z from their (3.2).
    /// Blocked: the (k, blocks) with the fewest cells such that
    /// blocked_false_positive_rate(n/blocks, k) ≤ δ.
    /// Throws std::invalid_argument on bad values.
    FlowLifecycleSizing sizing() const;
    /// P = ⌈T/G⌉ (so G·P ≥ T: no flow expires before T).
    std::int64_t generation_period_ns() const noexcept;
};

}  // namespace flowsketch::core
