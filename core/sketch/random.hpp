// Small deterministic PRNGs. Their output is fixed by the algorithm, unlike
// std:: distributions, so seeded tests and generated traffic are identical on
// every platform and library version.
#pragma once

#include <cstdint>

namespace flowsketch::core {

// GCC and Clang provide 128-bit integers; __extension__ keeps -Wpedantic quiet.
__extension__ typedef unsigned __int128 UInt128;

/// SplitMix64 (Steele, Lea, Flood 2014): used to expand one seed into many.
class SplitMix64 {
public:
    explicit SplitMix64(std::uint64_t seed) noexcept : state_(seed) {}
    std::uint64_t next() noexcept {
        std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }

private:
    std::uint64_t state_;
};

/// xoshiro256** (Blackman, Vigna): fast, statistically strong general PRNG.
class Xoshiro256 {
public:
    explicit Xoshiro256(std::uint64_t seed) noexcept {
        SplitMix64 sm(seed);
        for (auto& word : s_) word = sm.next();
    }
    std::uint64_t next() noexcept {
        const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const std::uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }
    /// Uniform double in [0, 1) from the top 53 bits.
    double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
    /// True with probability p (p <= 0 never, p >= 1 always).
    bool chance(double p) noexcept { return uniform() < p; }
    /// Uniform integer in [0, n) by Lemire's multiply-shift (bias < n/2^64).
    std::uint64_t below(std::uint64_t n) noexcept {
        return static_cast<std::uint64_t>((static_cast<UInt128>(next()) * n) >> 64);
    }

private:
    static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
    std::uint64_t s_[4];
};

}  // namespace flowsketch::core
