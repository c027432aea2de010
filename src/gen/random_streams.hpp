// Random streams of `flowsketch gen`: the user's one seed becomes an
// independent xoshiro256** stream per concern.
//
// Everything random comes from our own xoshiro256** and our own sampling code,
// never from std:: distributions (whose output is implementation-defined), so
// one seed gives the same bytes on every platform. Each concern reads its own
// stream, so changing one option does not shift what the others draw.
#pragma once

#include <cstdint>

#include "core/sketch/random.hpp"

namespace flowsketch::gen {

/// The project's xoshiro256** (seeded through SplitMix64): deterministic on
/// every platform, which the pinned-output tests rely on.
using Rng = core::Xoshiro256;

// SplitMix64's finaliser: derives independent stream seeds from the user's seed.
inline std::uint64_t splitmix_mix(std::uint64_t z) noexcept {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// Independent random streams per concern, derived from the one user seed.
enum class Stream : std::uint64_t {
    flows = 1,
    popularity = 2,
    sizes = 3,
    arrivals = 4,
    // Lifetime mode only: none of these is read by the stationary mode.
    budgets = 5,
    arrival_order = 6,
    flow_arrivals = 7,
    durations = 8,
    pauses = 9,
    endings = 10,
    spacing = 11,
    // --syn-flood only.
    flood_sources = 12,
    flood_times = 13,
    flood_headers = 14,
    // --scenario only: one stream per scenario (stream_rng's instance).
    scenarios = 15,
};

inline Rng stream_rng(std::uint64_t seed, Stream stream) noexcept {
    // Mixing (not adding) keeps the streams' SplitMix sequences from overlapping.
    return Rng(splitmix_mix(seed ^ splitmix_mix(static_cast<std::uint64_t>(stream))));
}

/// The stream of one of several instances of a concern (the i-th --scenario):
/// instance 0 is not stream_rng(seed, stream), so no instance repeats another concern.
inline Rng stream_rng(std::uint64_t seed, Stream stream, std::uint64_t instance) noexcept {
    return Rng(splitmix_mix(seed ^ splitmix_mix(static_cast<std::uint64_t>(stream) + ((instance + 1) << 8))));
}

}  // namespace flowsketch::gen
