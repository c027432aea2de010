// Bounds on the flows a filter's false positives hide (the new flows behind
// the seen filter, the ends behind the ended filter). Derivations:
// docs/flow-lifecycle.md, "new" and "ended".
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace flowsketch::core::lifecycle {

/// Detections are charged in segments of at most this many flows, so a
/// filter's rate, which only grows between clears, changes little within one.
inline constexpr std::uint64_t segment_flows = 256;

/// Deviation t with P(X ≥ μ + t) ≤ 10⁻³ for a sum of (martingale) Bernoulli
/// indicators with mean and variance at most μ (Freedman/Bernstein):
/// exp(−t²/(2(μ + t/3))) = 10⁻³  ⇔  t = L/3 + √((L/3)² + 2μL), L = ln 1000.
inline double bernstein_deviation(double mu) noexcept {
    const double l = std::log(1000.0);
    return l / 3.0 + std::sqrt((l / 3.0) * (l / 3.0) + 2.0 * mu * l);
}

/// f/(1 − f): expected misses per detection when each lookup misses with
/// probability f (truth = detected + missed, missed ≈ f·truth). ∞ at f = 1.
inline double miss_ratio(double f) noexcept {
    if (f >= 1.0) return std::numeric_limits<double>::infinity();
    return f / (1.0 - f);
}

/// Bound (probability ≈ 0.999) on the flows missed behind detections whose
/// expected misses total μ, when no lookup had a false-positive rate above f.
/// Freedman over the arrivals, each missed with probability ≤ f, bounds the
/// misses by f·arrivals plus the deviation; arrivals are detections plus
/// misses, so the deviation grows by 1/(1 − f) = 1 + f/(1 − f).
/// Markov's inequality (P(X ≥ k) ≤ μ/k) gives the tighter answer when so few
/// misses are expected that Bernstein's floor, 2·ln(1000)/3 ≈ 4.6, dominates:
/// the whole number k − 1 for the least k ≥ 1000·μ, 0 when μ ≤ 10⁻³.
inline double miss_bound(double mu, double max_fpr) noexcept {
    const double bernstein = mu + (1.0 + miss_ratio(max_fpr)) * bernstein_deviation(mu);
    const double markov = std::max(std::ceil(1000.0 * mu), 1.0) - 1.0;
    return std::min(bernstein, markov);
}

/// miss_bound for an interval with detections charged μ in all, plus the run
/// of misses after its last detection (one more geometric run, mean
/// f/(1 − f)): without it an interval that detected nothing would claim to
/// have missed nothing however full its filter. Each miss is an observation
/// that was not a detection, so `undetected` observations cap the bound (and
/// keep it finite at f = 1).
inline double interval_miss_bound(double mu, double max_fpr, std::uint64_t undetected) noexcept {
    return std::min(miss_bound(mu + miss_ratio(max_fpr), max_fpr), static_cast<double>(undetected));
}

}  // namespace flowsketch::core::lifecycle
