#include "core/hash.hpp"

#include <xxhash.h>

namespace flowsketch::core {

Hash128 hash128(const void* data, std::size_t size, std::uint64_t seed) noexcept {
    const XXH128_hash_t h = XXH3_128bits_withSeed(data, size, seed);
    return Hash128{h.low64, h.high64};
}

std::uint64_t hash64(const void* data, std::size_t size, std::uint64_t seed) noexcept {
    return XXH3_64bits_withSeed(data, size, seed);
}

}  // namespace flowsketch::core
