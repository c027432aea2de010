#include "reports/html/interval_history.hpp"

#include <algorithm>

namespace flowsketch::reports::html {

void IntervalPoint::absorb(const IntervalPoint& next) {
    end = next.end;
    intervals += next.intervals;
    frames += next.frames;
    packets += next.packets;
    bytes += next.bytes;
    skipped += next.skipped;
    dropped += next.dropped;
    has_flows = has_flows || next.has_flows;
    new_flows += next.new_flows;
    new_undercount_bound += next.new_undercount_bound;
    expired += next.expired;
    expired_variance += next.expired_variance;
    active = next.active;
    active_lower = next.active_lower;
    active_upper = next.active_upper;
}

IntervalPoint point_of(const Report& report) {
    IntervalPoint point;
    point.start = report.start;
    point.end = report.end;
    point.frames = static_cast<double>(report.frames);
    point.packets = static_cast<double>(report.packets);
    point.bytes = static_cast<double>(report.bytes);
    for (const SkipCount& skip : report.skipped) point.skipped += static_cast<double>(skip.count);
    for (const InterfaceReport& interface : report.interfaces) {
        point.dropped += static_cast<double>(interface.dropped + interface.if_dropped);
    }
    point.has_flows = report.has_flows;
    if (report.has_flows) {
        const core::FlowCounts& f = report.flows.counts;
        point.new_flows = static_cast<double>(f.new_flows);
        point.new_undercount_bound = f.new_undercount_bound;
        point.expired = f.expired;
        point.expired_variance = f.expired_stderr * f.expired_stderr;
        point.active = f.active;
        point.active_lower = f.active_lower;
        point.active_upper = f.active_upper;
    }
    return point;
}

IntervalHistory::IntervalHistory(std::size_t capacity) : capacity_(std::max<std::size_t>(2, capacity + capacity % 2)) {
    points_.reserve(capacity_);
}

void IntervalHistory::add(const Report& interval) {
    ++seen_;
    const IntervalPoint point = point_of(interval);
    if (!points_.empty() && points_.back().intervals < resolution_) {
        points_.back().absorb(point);
        return;
    }
    if (points_.size() == capacity_) {
        // Full: pairs merge, halving the points; the resolution doubles.
        for (std::size_t i = 0; i < capacity_ / 2; ++i) {
            IntervalPoint merged = points_[2 * i];
            merged.absorb(points_[2 * i + 1]);
            points_[i] = merged;
        }
        points_.resize(capacity_ / 2);
        resolution_ *= 2;
    }
    points_.push_back(point);
}

}  // namespace flowsketch::reports::html
