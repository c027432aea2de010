// The two-choice seen filter (Lumetta–Mitzenmacher): two groups of k probes
// per flow in the standard filter's table, the second from the hash remixed.
// A new flow writes the group with fewer empty cells (online greedy), a
// covered one the covering group whose oldest cell is newest; f = 1 − (1 − ρ^k)².
// Its flows choose cells, so the zero cells no longer estimate them: the
// lifecycle counts tokens instead (docs/flow-lifecycle.md, "two-choice").
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/lifecycle/double_hashed_cells.hpp"
#include "core/lifecycle/seen_filter.hpp"
#include "core/sketch/probes.hpp"

namespace flowsketch::core::lifecycle {

class TwoChoiceSeenFilter {
public:
    static constexpr SeenFilterKind kind = SeenFilterKind::two_choice;
    static constexpr std::size_t prefetch_lookahead = 6;  // k lines per packet (the first group's)
    static constexpr bool prefetch_reads_recent = true;
    static constexpr bool counts_tokens = true;

    TwoChoiceSeenFilter(const FlowLifecycleSizing& sizing, std::uint64_t seed1, std::uint64_t seed2)
        : cells_(sizing.cells, sizing.k, seed1, seed2) {}

    /// The first group's k lines, unless the flow is recent; the second group
    /// is read only when the first is not current.
    FLOWSKETCH_PREFETCH void prefetch(const Hash128& hash, const RecentFlowTable& recent) const noexcept {
        cells_.prefetch_unless_recent(hash, recent);
    }
    SeenRefresh refresh(const Hash128& hash, const GenerationClock& clock, bool /*ends*/,
                        std::uint64_t* positions) noexcept {
        cells_.generate(hash, positions);
        const CellScan first = cells_.scan(positions, clock);
        if (first.max_age == 0) return SeenRefresh{true, false, 0};
        std::uint64_t second_positions[max_probes];
        cells_.generate(second_group(hash), second_positions);
        const CellScan second = cells_.scan(second_positions, clock);
        const bool covered1 = first.max_age != dead;
        const bool covered2 = second.max_age != dead;
        bool use_second = false;
        if (covered1 || covered2) {
            // Refresh the covering group whose oldest cell is newest: the
            // flow's own group has every cell at least as new as its last packet.
            use_second = covered2 && (!covered1 || second.max_age < first.max_age);
        } else {
            // Online greedy (Lumetta–Mitzenmacher §3.1): fewer new cells;
            // ties by a hash bit not used by the probes' reduction.
            use_second =
                second.zeros < first.zeros || (second.zeros == first.zeros && (hash.h2 & 1) != 0);
        }
        const CellScan& chosen = use_second ? second : first;
        if (chosen.max_age == 0) return SeenRefresh{true, false, 0};
        cells_.write(use_second ? second_positions : positions, clock.current(), chosen.zeros);
        return SeenRefresh{false, chosen.max_age == dead, chosen.max_age};
    }
    bool contains(const Hash128& hash, const GenerationClock& clock) const noexcept;

    std::uint64_t cells() const noexcept { return cells_.cells(); }
    std::uint64_t nonzero() const noexcept { return cells_.nonzero(); }
    double fpr() const noexcept;
    std::uint64_t clear_stamp(std::uint32_t stamp) noexcept { return cells_.clear_stamp(stamp); }
    void clear_all() noexcept { cells_.clear_all(); }
    std::size_t memory_bytes() const noexcept { return cells_.memory_bytes(); }

private:
    /// The second group's (h1, h2): both words remixed by a bijection with
    /// salts, so its probes are independent of the first group's for all
    /// practical purposes.
    static Hash128 second_group(const Hash128& hash) noexcept {
        return Hash128{mix64(hash.h1 + group_salt1), mix64(hash.h2 + group_salt2)};
    }

    DoubleHashedCells cells_;
};

static_assert(SeenFilter<TwoChoiceSeenFilter>);

}  // namespace flowsketch::core::lifecycle
