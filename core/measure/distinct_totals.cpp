#include "core/measure/distinct_totals.hpp"

#include <algorithm>

namespace flowsketch::core {
namespace {

DistinctBounds bounds_of(const HyperLogLog& counter) noexcept {
    const double e = counter.estimate();
    const double spread = DistinctSketch::t * counter.relative_error();
    return DistinctBounds{e, std::max(0.0, e / (1 + spread)), e / (1 - spread)};
}

}  // namespace

DistinctTotals DistinctTotalsSketch::totals() const noexcept {
    return DistinctTotals{bounds_of(flows_), bounds_of(sources_), bounds_of(destinations_)};
}

}  // namespace flowsketch::core
