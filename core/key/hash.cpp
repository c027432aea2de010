#include "core/key/hash.hpp"

// The library's own implementation, compiled here: the key hash below then
// runs XXH3's path for 17–128 bytes specialised for a 40-byte key, with no
// call into the shared library (xxHash documents XXH_INLINE_ALL for this).
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstring>

#include "core/platform/simd.hpp"

namespace flowsketch::core {

Hash128 hash128(const void* data, std::size_t size, std::uint64_t seed) noexcept {
    const XXH128_hash_t h = XXH3_128bits_withSeed(data, size, seed);
    return Hash128{h.low64, h.high64};
}

Hash128 hash_key(const FlowKey& key, std::uint64_t seed) noexcept {
    const XXH128_hash_t h = XXH3_128bits_withSeed(&key, sizeof key, seed);
    return Hash128{h.low64, h.high64};
}

void hash_keys(const std::byte* first, std::size_t stride, std::size_t count, std::uint64_t seed,
               Hash128* out, bool vector) noexcept {
    std::size_t done = 0;
    static_assert(sizeof(Hash128) == 2 * sizeof(std::uint64_t), "(h1, h2) pairs, no padding");
    if (vector && count >= 8) {
        done = count - count % 8;
        std::uint64_t secret[8];  // the default secret's first 64 bytes, all a 40-byte input reads
        std::memcpy(secret, XXH3_kSecret, sizeof secret);
        simd::hash_keys40_avx512(first, stride, done, seed, secret,
                                 reinterpret_cast<std::uint64_t*>(out));
    }
    for (std::size_t i = done; i < count; ++i) {
        const XXH128_hash_t h = XXH3_128bits_withSeed(first + i * stride, sizeof(FlowKey), seed);
        out[i] = Hash128{h.low64, h.high64};
    }
}

std::uint64_t hash64(const void* data, std::size_t size, std::uint64_t seed) noexcept {
    return XXH3_64bits_withSeed(data, size, seed);
}

}  // namespace flowsketch::core
