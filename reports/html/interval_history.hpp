// The interval series an HTML report plots, in fixed memory: one point per
// interval report up to a capacity; when it is full, neighbouring points are
// merged in pairs and later intervals join the last point until it spans as
// many intervals as the others. A long run keeps its whole time range at a
// coarser resolution: nothing is dropped, and each point says how many
// intervals it holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "reports/report.hpp"

namespace flowsketch::reports::html {

struct IntervalPoint {
    double start = 0;  // Unix seconds: the first merged interval's start
    double end = 0;    // the last one's end
    std::uint64_t intervals = 1;
    // Sums over the merged intervals.
    double frames = 0;
    double packets = 0;
    double bytes = 0;
    double skipped = 0;  // frames not keyed, every reason
    double dropped = 0;  // live capture: dropped by the kernel and by interfaces
    bool has_flows = false;
    double new_flows = 0;
    double new_undercount_bound = 0;  // bounds of a sum add up (union bound)
    double expired = 0;
    double expired_variance = 0;  // Σ stderr², the intervals' errors taken as independent
    // As of the last merged interval's end.
    double active = 0;
    double active_lower = 0;
    double active_upper = 0;

    /// `next` (the interval after this point) joined to it.
    void absorb(const IntervalPoint& next);
};

/// A report's numbers as one point.
IntervalPoint point_of(const Report& report);

class IntervalHistory {
public:
    static constexpr std::size_t default_capacity = 10'000;
    /// `capacity` is rounded up to an even number ≥ 2.
    explicit IntervalHistory(std::size_t capacity = default_capacity);

    void add(const Report& interval);
    const std::vector<IntervalPoint>& points() const noexcept { return points_; }
    std::uint64_t intervals_seen() const noexcept { return seen_; }
    /// Intervals per point (1 until the capacity was first reached).
    std::uint64_t resolution() const noexcept { return resolution_; }
    std::size_t capacity() const noexcept { return capacity_; }

private:
    std::size_t capacity_;
    std::uint64_t resolution_ = 1;
    std::uint64_t seen_ = 0;
    std::vector<IntervalPoint> points_;
};

}  // namespace flowsketch::reports::html
