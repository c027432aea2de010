#include "core/lifecycle/sizing.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <mutex>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/lifecycle/block_layout.hpp"
#include "core/lifecycle/dirty_tracked_words.hpp"
#include "core/sketch/bloom_filter.hpp"
#include "core/sketch/primes.hpp"
#include "core/sketch/probes.hpp"
#include "core/sketch/two_choice_bloom_filter.hpp"

namespace flowsketch::core {
namespace {

using lifecycle::block_fill_powers;
using lifecycle::block_hit_probability;

constexpr std::uint64_t max_cells = std::uint64_t{1} << 36;  // 32 GiB of cells: far past any use

/// E[(j/128)^k | L flows in a block], j the block's non-zero cells after the
/// k·L uniform probes of L flows, for L = 0, 1, ...: the occupancy
/// distribution of the probes, advanced one probe at a time and extended on demand.
class BlockFillPowers {
  public:
    explicit BlockFillPowers(std::uint32_t k) : k_(k), powers_(block_fill_powers(k)) {
        occupancy_[0][0] = 1.0;
        // A probe hits one of the j non-zero cells with probability j/128.
        // Divided once here, not per probe: the sizing search advances the
        // recurrence thousands of times when a process starts.
        constexpr double b = lifecycle_block_cells;
        for (std::uint32_t j = 0; j <= lifecycle_block_cells; ++j) {
            stay_[j] = j / b;
            arrive_[j] = (b - (static_cast<double>(j) - 1)) / b;
        }
    }

    double at(std::uint64_t flows) {
        while (by_flows_.size() <= flows) {
            const std::uint64_t target = std::uint64_t{k_} * by_flows_.size();
            for (; probes_ < target; ++probes_) {
                // From one array into the other, so the loop vectorises without shuffles.
                const auto& from = occupancy_[probes_ % 2];
                auto& to = occupancy_[(probes_ + 1) % 2];
                to[0] = 0.0;
                for (std::uint32_t j = 1; j <= lifecycle_block_cells; ++j) {
                    to[j] = from[j] * stay_[j] + from[j - 1] * arrive_[j];
                }
            }
            const auto& occupancy = occupancy_[probes_ % 2];
            double sum = 0.0;
            for (std::uint32_t j = 0; j <= lifecycle_block_cells; ++j)
                sum += occupancy[j] * powers_[j];
            by_flows_.push_back(sum);
        }
        return by_flows_[flows];
    }

  private:
    std::uint32_t k_;
    std::uint64_t probes_ = 0;
    std::array<double, lifecycle_block_cells + 1> powers_;
    // After even and odd probes.
    std::array<std::array<double, lifecycle_block_cells + 1>, 2> occupancy_{};
    // j/128: the probe hits a set cell.
    std::array<double, lifecycle_block_cells + 1> stay_{};
    // (128 − (j − 1))/128: the probe arrives from j − 1.
    std::array<double, lifecycle_block_cells + 1> arrive_{};
    std::vector<double> by_flows_;
};

/// Σ_L Poisson(L; λ)·powers.at(L), over L within λ ± (12√λ + 30) (the rest of
/// the mass is below 10⁻³⁰). The probabilities are walked from the mode so
/// that neither e^−λ nor λ^L under- or overflows.
double blocked_rate(BlockFillPowers& powers, double lambda) {
    if (lambda <= 0.0) return 0.0;
    const double spread = 12.0 * std::sqrt(lambda) + 30.0;
    const auto mode = static_cast<std::uint64_t>(lambda);
    const auto last = static_cast<std::uint64_t>(lambda + spread);
    const double at_mode = std::exp(-lambda + static_cast<double>(mode) * std::log(lambda) -
                                    std::lgamma(static_cast<double>(mode) + 1.0));
    double sum = at_mode * powers.at(mode);
    double p = at_mode;
    for (std::uint64_t l = mode + 1; l <= last; ++l) {
        p *= lambda / static_cast<double>(l);
        sum += p * powers.at(l);
    }
    p = at_mode;
    for (std::uint64_t l = mode; l > 0 && static_cast<double>(mode - l) < spread; --l) {
        p *= static_cast<double>(l) / lambda;
        sum += p * powers.at(l - 1);
    }
    return sum;
}

struct BlockedSizing {
    std::uint64_t max_flows = 0;
    double target_fpr = 0;
    std::uint32_t k = 0;
    std::uint64_t blocks = 0;  // 0: no k meets δ within max_cells
    double design_fpr = 0;
};

// The search behind FlowLifecycleConfig::sizing() for the blocked filter (see
// there). It is the slow part of building a filter, and a process builds
// filters of the same configuration again and again (the fuzz targets once
// per input, tests per case): the last results are kept.
BlockedSizing blocked_sizing(std::uint64_t max_flows, double target_fpr, std::uint32_t k_std) {
    static std::mutex mutex;
    static std::vector<BlockedSizing> known;
    const std::lock_guard<std::mutex> lock(mutex);
    for (const BlockedSizing& b : known) {
        if (b.max_flows == max_flows && b.target_fpr == target_fpr) return b;
    }
    if (known.size() == 64) known.clear();  // bounded
    BlockedSizing result;
    result.max_flows = max_flows;
    result.target_fpr = target_fpr;
    const double n = static_cast<double>(max_flows);
    const std::uint32_t k_min = k_std > 6 ? k_std - 6 : 1;
    const std::uint32_t k_max = std::min<std::uint32_t>(max_probes, k_std + 2);
    for (std::uint32_t k = k_min; k <= k_max; ++k) {
        BlockFillPowers powers(k);
        double lo = 0.0;
        double hi = 2.0 * lifecycle_block_cells * std::numbers::ln2 / k;
        while (blocked_rate(powers, hi) <= target_fpr && hi < 1e7) hi *= 2.0;
        for (int i = 0; i < 48; ++i) {
            const double mid = 0.5 * (lo + hi);
            (blocked_rate(powers, mid) <= target_fpr ? lo : hi) = mid;
        }
        if (!(lo > 0.0)) continue;  // no load meets δ with this k
        const double blocks = std::max(1.0, std::ceil(n / lo));
        if (blocks * lifecycle_block_cells > static_cast<double>(max_cells)) continue;
        const auto b = static_cast<std::uint64_t>(blocks);
        if (result.blocks == 0 || b < result.blocks) {
            result.blocks = b;
            result.k = k;
            result.design_fpr = blocked_rate(powers, n / blocks);
        }
    }
    known.push_back(result);
    return result;
}

}  // namespace

std::string_view seen_filter_kind_name(SeenFilterKind kind) noexcept {
    switch (kind) {
        case SeenFilterKind::standard:
            return "standard";
        case SeenFilterKind::two_choice:
            return "two-choice";
        case SeenFilterKind::blocked:
            return "blocked";
    }
    return "unknown";
}

double blocked_false_positive_rate(double flows_per_block, std::uint32_t k) {
    BlockFillPowers powers(k);
    return blocked_rate(powers, flows_per_block);
}

std::uint32_t FlowLifecycleConfig::probes_for(double target_fpr) {
    // BloomParams::for_rate is the DESIGN.md formula k = ⌈log2(1/δ)⌉ (it validates δ).
    return BloomParams::for_rate(1, target_fpr).k;
}

std::uint64_t FlowLifecycleConfig::cells_for(std::uint64_t max_flows, double target_fpr) {
    if (max_flows < 1) throw std::invalid_argument("max-flows must be at least 1");
    const std::uint32_t k = probes_for(target_fpr);
    const double m = std::ceil(static_cast<double>(max_flows) * k / std::numbers::ln2);
    if (!(m <= static_cast<double>(max_cells))) {
        throw std::invalid_argument("max-flows " + std::to_string(max_flows) +
                                    " at this flow-fpr needs more than 2^36 filter cells");
    }
    std::uint64_t cells = std::max<std::uint64_t>(static_cast<std::uint64_t>(m), 2);
    while (!is_prime(cells)) ++cells;  // prime gaps near 2^36 are < 1000: quick
    return cells;
}

std::int64_t FlowLifecycleConfig::generation_period_ns() const noexcept {
    if (generations == 0 || idle_timeout_ns <= 0) return 0;
    const std::int64_t g = generations;
    return idle_timeout_ns / g + (idle_timeout_ns % g != 0 ? 1 : 0);
}

FlowLifecycleSizing FlowLifecycleConfig::sizing() const {
    if (generations < 1 || generations > max_lifecycle_generations) {
        throw std::invalid_argument("generations must be in 1.." +
                                    std::to_string(max_lifecycle_generations) + ", got " +
                                    std::to_string(generations));
    }
    if (idle_timeout_ns < static_cast<std::int64_t>(generations)) {
        throw std::invalid_argument("idle timeout must be positive (at least 1 ns per generation)");
    }
    if (kind != SeenFilterKind::standard && kind != SeenFilterKind::two_choice &&
        kind != SeenFilterKind::blocked) {
        throw std::invalid_argument("unknown seen-filter kind");
    }
    if (!(overfill_factor >= 1.0)) throw std::invalid_argument("overfill factor must be >= 1");
    FlowLifecycleSizing s;
    s.cells = cells_for(max_flows, target_fpr);
    s.k = probes_for(target_fpr);
    const double n = static_cast<double>(max_flows);
    const double m = static_cast<double>(s.cells);
    if (kind == SeenFilterKind::standard) {
        s.design_fill = -std::expm1(n * std::log1p(-static_cast<double>(s.k) / m));
        s.design_fpr = std::pow(s.design_fill, static_cast<double>(s.k));
    } else if (kind == SeenFilterKind::blocked) {
        // For each k near the standard one, the most flows per block λ_k with
        // f(λ_k) ≤ δ (f grows with λ: bisection); keep the k needing the fewest
        // blocks ⌈n/λ_k⌉ (ties: fewer probes). The optimum sits below the
        // standard k (8 instead of 10 at δ = 10⁻³): a block's cells fill unevenly.
        const BlockedSizing b = blocked_sizing(max_flows, target_fpr, s.k);
        const std::uint64_t best_blocks = b.blocks;
        s.k = b.k;
        s.design_fpr = b.design_fpr;
        if (best_blocks == 0) {
            throw std::invalid_argument("max-flows " + std::to_string(max_flows) +
                                        " at this flow-fpr needs more than 2^36 filter cells");
        }
        s.cells = best_blocks * lifecycle_block_cells;
        s.design_fill =
            -std::expm1(-n / static_cast<double>(best_blocks) * block_hit_probability(s.k));
    } else {
        // Same memory; the k that minimises the online-greedy prediction. The
        // optimum lies a little above the standard k (Lumetta–Mitzenmacher
        // Table 2); 100 Runge–Kutta steps are accurate to ~10⁻⁸ here.
        const std::uint32_t k_min = std::max<std::uint32_t>(1, s.k - std::min(s.k - 1, 2u));
        const std::uint32_t k_max = std::min<std::uint32_t>(max_probes, 2 * s.k + 2);
        s.design_fpr = 2.0;
        for (std::uint32_t k = k_min; k <= k_max; ++k) {
            const double z = two_choice_fill_prediction(m / n, k, 2, 100);
            const double f = two_choice_false_positive_rate(z, k, 2);
            if (f < s.design_fpr) {
                s.design_fpr = f;
                s.design_fill = z;
                s.k = k;
            }
        }
    }
    s.table_bytes = static_cast<std::size_t>((s.cells + 15) / 16) * sizeof(std::uint64_t) +
                    DirtyTrackedWords::planned_bytes(static_cast<std::size_t>((s.cells + 63) / 64));
    if (kind == SeenFilterKind::blocked) s.table_bytes += s.cells / lifecycle_block_cells;
    return s;
}

}  // namespace flowsketch::core
