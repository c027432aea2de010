// The interface of a seen filter: the structure that says whether a flow is
// active, refreshes it, and forgets the generation leaving the window. One
// type per kind (standard_seen_filter.hpp, two_choice_seen_filter.hpp,
// blocked_seen_filter.hpp); FlowLifecycle holds one and keeps the rest
// (generations, counts, errors, the recent-flow table, the ended filter).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>

#include "core/key/hash.hpp"
#include "core/lifecycle/recent_flow_table.hpp"
#include "core/lifecycle/sizing.hpp"
#include "core/lifecycle/stamps.hpp"

namespace flowsketch::core::lifecycle {

inline constexpr std::uint64_t group_salt1 = 0x6c6966652d677231ULL;  // "life-gr1"
inline constexpr std::uint64_t group_salt2 = 0x6c6966652d677232ULL;  // "life-gr2"

/// What refreshing one flow found.
struct SeenRefresh {
    bool current = false;  ///< every cell it refreshes held the current stamp: nothing written
    bool is_new = false;   ///< some probed cell was empty: the flow was not active
    /// Else: the age of the refreshed group's oldest cell (its token's generation).
    std::uint32_t age = 0;
};

// A concept, not a virtual base: refresh() runs per packet, so a batch picks the kind once.
template <class F>
concept SeenFilter = requires(F& filter, const F& cfilter, const Hash128& hash,
                              const GenerationClock& clock, const RecentFlowTable& recent,
                              std::uint64_t* positions, std::uint32_t stamp) {
    { F::kind } -> std::convertible_to<SeenFilterKind>;
    /// How many packets ahead of refresh() a batch should prefetch(): far
    /// enough to hide a miss to the L3 cache, near enough that the lines in
    /// flight fit the core's miss buffers.
    { F::prefetch_lookahead } -> std::convertible_to<std::size_t>;
    /// prefetch() reads the flow's recent-table slot: a batch loads it earlier still.
    { F::prefetch_reads_recent } -> std::convertible_to<bool>;
    /// The fill does not follow (1 − p)^n, so active and expired flows are
    /// counted by tokens, not estimated from the zero cells.
    { F::counts_tokens } -> std::convertible_to<bool>;
    /// Starts loading what refresh() will touch (no effect on results).
    /// Always inline (FLOWSKETCH_PREFETCH, stamps.hpp).
    cfilter.prefetch(hash, recent);
    /// Writes the current stamp into the flow's cells (unless current);
    /// `positions` (max_probes) receives the flow's first-group positions
    /// when `ends` (the ended filter's), and may be scratch otherwise.
    { filter.refresh(hash, clock, bool{}, positions) } -> std::same_as<SeenRefresh>;
    /// Whether the flow is active; changes nothing.
    { cfilter.contains(hash, clock) } -> std::same_as<bool>;
    { cfilter.cells() } -> std::same_as<std::uint64_t>;
    { cfilter.nonzero() } -> std::same_as<std::uint64_t>;
    /// The current false-positive rate of a fresh key.
    { cfilter.fpr() } -> std::same_as<double>;
    /// Empties the cells holding `stamp`; returns how many.
    { filter.clear_stamp(stamp) } -> std::same_as<std::uint64_t>;
    filter.clear_all();
    { cfilter.memory_bytes() } -> std::same_as<std::size_t>;
}
&&(F::counts_tokens || requires(const F& cfilter, double zeros) {
    /// n̂ from the zero cells, and its variance.
    { cfilter.estimate(zeros) } -> std::same_as<double>;
    { cfilter.estimate_variance(zeros) } -> std::same_as<double>;
});

}  // namespace flowsketch::core::lifecycle
