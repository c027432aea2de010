// Sampling distributions of `flowsketch gen`: Walker/Vose alias tables, Zipf
// weights and exponentials, on our own Rng (never std:: distributions, whose
// output is implementation-defined).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "src/gen/random_streams.hpp"

namespace flowsketch::gen {

/// Walker/Vose alias table: O(n) build, O(1) sample from a discrete distribution.
class AliasTable {
  public:
    /// Weights must be finite and >= 0 with a positive sum.
    explicit AliasTable(std::span<const double> weights);
    std::uint32_t sample(Rng& rng) const noexcept;
    std::size_t size() const noexcept { return alias_.size(); }

  private:
    // Acceptance thresholds in units of 2^-53, compared with 53 random bits as
    // integers, so sampling itself involves no floating point.
    std::vector<std::uint64_t> threshold_;
    std::vector<std::uint32_t> alias_;
};

/// Zipf weights r^-s for ranks r = 1..n (unnormalised; s = 0 is uniform).
std::vector<double> zipf_weights(std::uint64_t n, double s);

/// Exponential with the given mean by inversion; 1 - u is in (0, 1], so the log is finite.
inline double exponential(Rng& rng, double mean) noexcept {
    return -std::log1p(-rng.uniform()) * mean;
}

}  // namespace flowsketch::gen
