// The standard seen filter: a flow's k probes spread over the whole table by
// double hashing (double_hashed_cells.hpp). Its non-zero cells are a Bloom
// filter of the active flows, so f = ρ^k and the active flows are estimated
// from the zero cells by linear counting.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/lifecycle/double_hashed_cells.hpp"
#include "core/lifecycle/seen_filter.hpp"

namespace flowsketch::core::lifecycle {

class StandardSeenFilter {
public:
    static constexpr SeenFilterKind kind = SeenFilterKind::standard;
    static constexpr std::size_t prefetch_lookahead = 6;  // k lines per packet
    static constexpr bool prefetch_reads_recent = true;
    static constexpr bool counts_tokens = false;

    StandardSeenFilter(const FlowLifecycleSizing& sizing, std::uint64_t seed1, std::uint64_t seed2);

    /// The k lines, unless the flow is recent (then refresh() never comes).
    FLOWSKETCH_PREFETCH void prefetch(const Hash128& hash, const RecentFlowTable& recent) const noexcept {
        cells_.prefetch_unless_recent(hash, recent);
    }
    SeenRefresh refresh(const Hash128& hash, const GenerationClock& clock, bool /*ends*/,
                        std::uint64_t* positions) noexcept {
        cells_.generate(hash, positions);
        const CellScan s = cells_.scan(positions, clock);
        if (s.max_age == 0) return SeenRefresh{true, false, 0};
        cells_.write(positions, clock.current(), s.zeros);
        return SeenRefresh{false, s.max_age == dead, s.max_age};
    }
    bool contains(const Hash128& hash, const GenerationClock& clock) const noexcept;

    std::uint64_t cells() const noexcept { return cells_.cells(); }
    std::uint64_t nonzero() const noexcept { return cells_.nonzero(); }
    double fpr() const noexcept;
    /// n̂ = ln(Z/m) / ln(1 − k/m).
    double estimate(double zeros) const noexcept;
    double estimate_variance(double zeros) const noexcept;
    std::uint64_t clear_stamp(std::uint32_t stamp) noexcept { return cells_.clear_stamp(stamp); }
    void clear_all() noexcept { cells_.clear_all(); }
    std::size_t memory_bytes() const noexcept { return cells_.memory_bytes(); }

private:
    DoubleHashedCells cells_;
    double log_spared_;  // ln(1 − k/m): a flow spares a given cell with probability 1 − k/m
};

static_assert(SeenFilter<StandardSeenFilter>);

}  // namespace flowsketch::core::lifecycle
