// Shared helpers for the core tests: deterministic key hashes.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/key/hash.hpp"

namespace flowsketch::core::testing {

/// Hash of key number `i` in stream `stream`: distinct (stream, i) pairs are
/// distinct keys, hashed once with XXH3-128 as the product does.
inline Hash128 key_hash(std::uint64_t i, std::uint64_t stream = 0) {
    const std::uint64_t key[2] = {stream, i};
    return hash128(key, sizeof key, 0x5eed);
}

/// Standard error of a binomial proportion with success probability p over n trials.
inline double binomial_se(double p, double n) { return std::sqrt(p * (1.0 - p) / n); }

}  // namespace flowsketch::core::testing
