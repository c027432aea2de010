// Index generators: k probe positions in [0, range) from one 128-bit hash
// (h1, h2) of a key. Every filter in core/ derives its probes here.
//
// Schemes (Kirsch–Mitzenmacher, "Less hashing, same performance", §5):
//  - independent:      k separately seeded 64-bit hashes of the key's 128-bit
//                      digest — the reference family (as good as k independent
//                      hashes of the key unless two keys' 128-bit digests
//                      collide, probability ≈ n²/2^129);
//  - double_hashing:   g_i = h1 + i·h2            (§5.2, f ≡ 0);
//  - enhanced_square:  g_i = h1 + i·h2 + i²       (§5.2, f(i) = i², Dillinger–Manolios);
//  - enhanced_cube:    g_i = h1 + i·h2 + i³       (§5.2, f(i) = i³);
// for i = 0 .. k−1, all modulo the range.
//
// Range handling (KM §5 and §3):
//  - power-of-two range 2^b: arithmetic wraps in 64 bits and the result is
//    masked to b bits. h2 is forced odd so the step is a unit mod 2^b and the
//    k probes of one key are distinct whenever k ≤ 2^b (an even step would
//    shorten the cycle: h2 = 2^(b−1) visits two positions only). Masking the
//    same 64-bit value is also what makes halving a filter work: the probe in
//    the half-size filter is the old probe with its top bit dropped.
//  - any other range m (prime recommended): h1 mod m and h2 mod m; h2 ≡ 0 is
//    replaced by 1 so no key collapses to a single position (the analysis of
//    §5.2 draws h2 uniformly from [m], 0 included; the change moves a 1/m
//    share of keys and is invisible in the false-positive rate). With m prime
//    every non-zero step is a unit, so the probes are distinct for k ≤ m;
//    with composite m a step sharing a factor with m gives a shorter cycle.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/key/hash.hpp"

namespace flowsketch::core {

enum class ProbeScheme : std::uint8_t {
    independent = 0,
    double_hashing = 1,
    enhanced_square = 2,
    enhanced_cube = 3,
};

inline constexpr std::uint32_t max_probes = 64;

inline std::string_view probe_scheme_name(ProbeScheme scheme) noexcept {
    switch (scheme) {
        case ProbeScheme::independent: return "independent";
        case ProbeScheme::double_hashing: return "double";
        case ProbeScheme::enhanced_square: return "enhanced-i2";
        case ProbeScheme::enhanced_cube: return "enhanced-i3";
    }
    return "unknown";
}

inline bool is_valid_probe_scheme(std::uint8_t value) noexcept { return value <= 3; }

/// Generates the k probes of a key for one scheme and range. A small value
/// type; copy it freely. The offsets f(i) mod range are precomputed.
class ProbeGenerator {
public:
    ProbeGenerator() = default;

    /// Throws std::invalid_argument unless 1 ≤ k ≤ max_probes, 1 ≤ range ≤ 2^62
    /// and the scheme is known.
    ProbeGenerator(ProbeScheme scheme, std::uint64_t range, std::uint32_t k, std::uint64_t seed)
        : scheme_(scheme), range_(range), k_(k), seed_(seed) {
        if (!is_valid_probe_scheme(static_cast<std::uint8_t>(scheme))) {
            throw std::invalid_argument("unknown probe scheme");
        }
        if (k < 1 || k > max_probes) {
            throw std::invalid_argument("number of probes k must be in 1.." +
                                        std::to_string(max_probes) + ", got " + std::to_string(k));
        }
        if (range < 1 || range > (std::uint64_t{1} << 62)) {
            throw std::invalid_argument("probe range must be in 1..2^62, got " +
                                        std::to_string(range));
        }
        power_of_two_ = (range & (range - 1)) == 0;
        mask_ = range - 1;
        for (std::uint32_t i = 0; i < k; ++i) {
            const std::uint64_t x = i;
            std::uint64_t f = 0;
            if (scheme == ProbeScheme::enhanced_square) f = x * x;
            if (scheme == ProbeScheme::enhanced_cube) f = x * x * x;
            offset_[i] = power_of_two_ ? f : f % range;
            // Independent family: hash function i is XXH3 with seed_i.
            seeds_[i] = mix(seed ^ (0x9e3779b97f4a7c15ULL * (x + 1)));
        }
    }

    ProbeScheme scheme() const noexcept { return scheme_; }
    std::uint64_t range() const noexcept { return range_; }
    std::uint32_t k() const noexcept { return k_; }
    std::uint64_t seed() const noexcept { return seed_; }
    bool power_of_two() const noexcept { return power_of_two_; }

    /// Writes the k probes of `hash` to out[0..k). Each is in [0, range).
    void generate(const Hash128& hash, std::uint64_t* out) const noexcept {
        if (scheme_ == ProbeScheme::independent) {
            for (std::uint32_t i = 0; i < k_; ++i) {
                out[i] = reduce(hash64(&hash, sizeof hash, seeds_[i]));
            }
            return;
        }
        if (power_of_two_) {
            const std::uint64_t step = hash.h2 | 1;
            std::uint64_t g = hash.h1;
            for (std::uint32_t i = 0; i < k_; ++i) {
                out[i] = (g + offset_[i]) & mask_;
                g += step;  // wraps mod 2^64, hence mod 2^b
            }
            return;
        }
        const std::uint64_t m = range_;
        std::uint64_t step = hash.h2 % m;
        if (step == 0) step = 1 % m;
        std::uint64_t g = hash.h1 % m;
        for (std::uint32_t i = 0; i < k_; ++i) {
            std::uint64_t v = g + offset_[i];  // both < m ≤ 2^62: no overflow
            if (v >= m) v -= m;
            out[i] = v;
            g += step;
            if (g >= m) g -= m;
        }
    }

private:
    static std::uint64_t mix(std::uint64_t z) noexcept {  // SplitMix64 finaliser
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    std::uint64_t reduce(std::uint64_t h) const noexcept {
        return power_of_two_ ? (h & mask_) : h % range_;
    }

    ProbeScheme scheme_ = ProbeScheme::double_hashing;
    std::uint64_t range_ = 1;
    std::uint32_t k_ = 1;
    std::uint64_t seed_ = 0;
    bool power_of_two_ = true;
    std::uint64_t mask_ = 0;
    std::array<std::uint64_t, max_probes> offset_{};
    std::array<std::uint64_t, max_probes> seeds_{};
};

}  // namespace flowsketch::core
