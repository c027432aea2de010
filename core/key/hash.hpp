// One 128-bit hash per key, split into the (h1, h2) pair that every structure
// derives its probe indices from (Kirsch–Mitzenmacher double hashing).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/key/flow_key.hpp"

namespace flowsketch::core {

struct Hash128 {
    std::uint64_t h1 = 0;
    std::uint64_t h2 = 0;
    friend bool operator==(const Hash128&, const Hash128&) = default;
};

/// XXH3-128 of the bytes with a seed. XXH3 is chosen over our own mixing
/// because it is well reviewed, passes SMHasher and runs at memory speed.
Hash128 hash128(const void* data, std::size_t size, std::uint64_t seed) noexcept;

/// hash128() of the key's 40 bytes (the same value, computed by a copy of
/// XXH3 specialised for that length).
Hash128 hash_key(const FlowKey& key, std::uint64_t seed) noexcept;

/// hash_key() of `count` keys, the i-th a FlowKey at `first + i·stride` bytes
/// (keys inside larger records), into out[0..count). With `vector` (only when
/// simd::level() is avx512), eight keys at a time in AVX-512 registers: XXH3's
/// 17–128-byte path written out for 40 bytes, each 64×64→128-bit multiply
/// from four 32-bit ones; the same values (tests/core/hash_test.cpp).
void hash_keys(const std::byte* first, std::size_t stride, std::size_t count, std::uint64_t seed,
               Hash128* out, bool vector) noexcept;

/// 64-bit hash (XXH3-64) for when a single value is enough (e.g. independent
/// reference hash families: seed i gives hash function i).
std::uint64_t hash64(const void* data, std::size_t size, std::uint64_t seed) noexcept;

/// MurmurHash3's 64-bit finaliser: a bijection whose every output bit depends
/// on every input bit. Mixes values that are already hashes, or small fields.
constexpr std::uint64_t fmix64(std::uint64_t x) noexcept {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

}  // namespace flowsketch::core
