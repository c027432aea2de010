// Distinct flows with a FIN or RST packet in the report interval: a plain
// Bloom filter of m bits at the seen filter's positions of the flow (its
// first group), cleared at each interval, and the bound on the ends its false
// positives hide. Apart from the seen filter because it answers another
// question on another clock: it never expires flows, it forgets an interval.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/lifecycle/block_layout.hpp"
#include "core/lifecycle/dirty_tracked_words.hpp"

namespace flowsketch::core::lifecycle {

class EndedFilter {
public:
    /// `blocks` > 0: the positions are the blocked filter's, and the rate is
    /// kept exact from a histogram of set bits per block (128 bits each). The
    /// calls below then take that filter's (j/128)^k (`block_powers`, null
    /// otherwise): the table is kept once, by the seen filter.
    EndedFilter(std::uint64_t cells, std::uint32_t k, std::uint64_t blocks);

    /// A FIN or RST packet of the flow at `positions` (k of them).
    void note(const std::uint64_t* positions, const FillPowers* block_powers) noexcept;
    /// Distinct flows ended since the last clear().
    std::uint64_t ended() const noexcept { return ended_; }
    /// truth − ended() ≤ this with probability ≈ 0.999 (docs/flow-lifecycle.md, "ended").
    double undercount_bound(const FillPowers* block_powers) const noexcept;
    /// A new interval: no flow has ended.
    void clear() noexcept;
    std::size_t memory_bytes() const noexcept { return bits_.memory_bytes(); }

private:
    double fpr(const FillPowers* block_powers) const noexcept;
    /// Expected ends missed behind the open segment's, at rate f.
    double segment_misses(double f) const noexcept;
    void close_segment(const FillPowers* block_powers) noexcept;
    std::uint32_t block_fill(std::uint64_t block) const noexcept;

    std::uint64_t m_;
    std::uint32_t k_;
    std::uint64_t blocks_;    // 0: not blocked
    DirtyTrackedWords bits_;  // 1 bit per position, cleared per interval
    std::uint64_t ones_ = 0;
    FillHistogram fill_blocks_{};  // blocked: blocks by set bits
    std::uint64_t ended_ = 0;
    std::uint64_t notes_ = 0;  // FIN/RST packets noted this interval: no more ends can hide
    // Expected ends missed behind the closed segments' ends, each charged the
    // filter's rate at its segment's close (the rate only grows within an
    // interval), and the ends of the open segment.
    double mu_ = 0;
    std::uint64_t segment_ = 0;
};

}  // namespace flowsketch::core::lifecycle
