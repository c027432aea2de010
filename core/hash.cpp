#include "core/hash.hpp"

// The library's own implementation, compiled here: the key hash below then
// runs XXH3's path for 17–128 bytes specialised for a 40-byte key, with no
// call into the shared library (xxHash documents XXH_INLINE_ALL for this).
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace flowsketch::core {

Hash128 hash128(const void* data, std::size_t size, std::uint64_t seed) noexcept {
    const XXH128_hash_t h = XXH3_128bits_withSeed(data, size, seed);
    return Hash128{h.low64, h.high64};
}

Hash128 hash_key(const FlowKey& key, std::uint64_t seed) noexcept {
    const XXH128_hash_t h = XXH3_128bits_withSeed(&key, sizeof key, seed);
    return Hash128{h.low64, h.high64};
}

std::uint64_t hash64(const void* data, std::size_t size, std::uint64_t seed) noexcept {
    return XXH3_64bits_withSeed(data, size, seed);
}

}  // namespace flowsketch::core
