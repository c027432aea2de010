#include "core/lifecycle/standard_seen_filter.hpp"

#include <algorithm>
#include <cmath>

#include "core/sketch/probes.hpp"

namespace flowsketch::core::lifecycle {

StandardSeenFilter::StandardSeenFilter(const FlowLifecycleSizing& sizing, std::uint64_t seed1,
                                       std::uint64_t seed2)
    : cells_(sizing.cells, sizing.k, seed1, seed2),
      log_spared_(std::log1p(-static_cast<double>(sizing.k) / static_cast<double>(sizing.cells))) {}

bool StandardSeenFilter::contains(const Hash128& hash,
                                  const GenerationClock& clock) const noexcept {
    std::uint64_t pos[max_probes];
    cells_.generate(hash, pos);
    return cells_.scan(pos, clock).max_age != dead;
}

double StandardSeenFilter::fpr() const noexcept {
    const double fill = static_cast<double>(cells_.nonzero()) / static_cast<double>(cells_.cells());
    return std::pow(fill, static_cast<double>(cells_.k()));
}

// Z = 0 is read as Z = 1/2 (a finite "at least").
double StandardSeenFilter::estimate(double zeros) const noexcept {
    const double z = std::max(zeros, 0.5);
    return std::log(z / static_cast<double>(cells_.cells())) / log_spared_;
}

// Var(n̂) by the delta method from Var(Z) with the number of flows fixed,
// t = ln(m/Z): linear counting of n·k probes, (m/k²)·(e^t − 1 − t)
// (docs/flow-lifecycle.md, "active").
double StandardSeenFilter::estimate_variance(double zeros) const noexcept {
    const double m = static_cast<double>(cells_.cells());
    const double t = std::log(m / std::max(zeros, 0.5));
    const double k = static_cast<double>(cells_.k());
    return std::max(0.0, m / (k * k) * (std::expm1(t) - t));
}

}  // namespace flowsketch::core::lifecycle
