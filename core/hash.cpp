#include "core/hash.hpp"

// The library's own implementation, compiled here: the key hash below then
// runs XXH3's path for 17–128 bytes specialised for a 40-byte key, with no
// call into the shared library (xxHash documents XXH_INLINE_ALL for this).
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>

#include "core/simd_multiply.hpp"
#endif

namespace flowsketch::core {

Hash128 hash128(const void* data, std::size_t size, std::uint64_t seed) noexcept {
    const XXH128_hash_t h = XXH3_128bits_withSeed(data, size, seed);
    return Hash128{h.low64, h.high64};
}

Hash128 hash_key(const FlowKey& key, std::uint64_t seed) noexcept {
    const XXH128_hash_t h = XXH3_128bits_withSeed(&key, sizeof key, seed);
    return Hash128{h.low64, h.high64};
}

#if defined(__x86_64__)
namespace {

#define FLOWSKETCH_HASH_TARGET __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl")))

// XXH3_mul128_fold64 in eight lanes: the 128-bit product's halves, XORed.
FLOWSKETCH_HASH_TARGET inline __m512i mul128_fold64(__m512i a, __m512i b) noexcept {
    const simd::WideProduct product = simd::multiply_wide(a, b);
    return _mm512_xor_si512(product.low, product.high);
}

FLOWSKETCH_HASH_TARGET inline __m512i avalanche(__m512i h) noexcept {  // XXH3_avalanche
    h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 37));
    h = _mm512_mullo_epi64(h, _mm512_set1_epi64(static_cast<long long>(0x165667919E3779F9ULL)));
    return _mm512_xor_si512(h, _mm512_srli_epi64(h, 32));
}

FLOWSKETCH_HASH_TARGET inline __m512i splat(std::uint64_t v) noexcept {
    return _mm512_set1_epi64(static_cast<long long>(v));
}

// XXH3_len_17to128_128b for len = 40 (two XXH128_mix32B rounds over the
// words w0..w4 of the key, with the default secret and the seed), eight keys
// at a time, one per lane.
FLOWSKETCH_HASH_TARGET void hash_keys_avx512(const std::byte* first, std::size_t stride,
                                             std::size_t count, std::uint64_t seed,
                                             Hash128* out) noexcept {
    static_assert(sizeof(FlowKey) == 40, "the kernel is XXH3 for 40 bytes");
    std::uint64_t s[8];
    std::memcpy(s, XXH3_kSecret, sizeof s);
    const __m512i c0 = splat(s[0] + seed), c1 = splat(s[1] - seed), c2 = splat(s[2] + seed),
                  c3 = splat(s[3] - seed), c4 = splat(s[4] + seed), c5 = splat(s[5] - seed),
                  c6 = splat(s[6] + seed), c7 = splat(s[7] - seed);
    const auto st = static_cast<long long>(stride);
    const __m512i offsets = _mm512_set_epi64(7 * st, 6 * st, 5 * st, 4 * st, 3 * st, 2 * st, st, 0);
    const __m512i len_p1 = splat(40 * XXH_PRIME64_1);
    const __m512i tail = _mm512_mullo_epi64(splat(40 - seed), splat(XXH_PRIME64_2));
    const __m512i interleave_low = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0);
    const __m512i interleave_high = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
    for (std::size_t i = 0; i + 8 <= count; i += 8) {
        const std::byte* base = first + i * stride;
        const __m512i w0 = _mm512_i64gather_epi64(offsets, base, 1);
        const __m512i w1 = _mm512_i64gather_epi64(offsets, base + 8, 1);
        const __m512i w2 = _mm512_i64gather_epi64(offsets, base + 16, 1);
        const __m512i w3 = _mm512_i64gather_epi64(offsets, base + 24, 1);
        const __m512i w4 = _mm512_i64gather_epi64(offsets, base + 32, 1);
        // mix32B(acc, input + 16, input + len − 32, secret + 32)
        __m512i lo = _mm512_add_epi64(len_p1, mul128_fold64(_mm512_xor_si512(w2, c4),
                                                            _mm512_xor_si512(w3, c5)));
        lo = _mm512_xor_si512(lo, _mm512_add_epi64(w1, w2));
        __m512i hi = mul128_fold64(_mm512_xor_si512(w1, c6), _mm512_xor_si512(w2, c7));
        hi = _mm512_xor_si512(hi, _mm512_add_epi64(w2, w3));
        // mix32B(acc, input, input + len − 16, secret)
        lo = _mm512_add_epi64(lo, mul128_fold64(_mm512_xor_si512(w0, c0), _mm512_xor_si512(w1, c1)));
        lo = _mm512_xor_si512(lo, _mm512_add_epi64(w3, w4));
        hi = _mm512_add_epi64(hi, mul128_fold64(_mm512_xor_si512(w3, c2), _mm512_xor_si512(w4, c3)));
        hi = _mm512_xor_si512(hi, _mm512_add_epi64(w0, w1));
        const __m512i h1 = avalanche(_mm512_add_epi64(lo, hi));
        const __m512i h2_pre = _mm512_add_epi64(
            _mm512_add_epi64(_mm512_mullo_epi64(lo, splat(XXH_PRIME64_1)),
                             _mm512_mullo_epi64(hi, splat(XXH_PRIME64_4))),
            tail);
        const __m512i h2 = _mm512_sub_epi64(_mm512_setzero_si512(), avalanche(h2_pre));
        // (h1, h2) pairs, as Hash128 lays them out.
        _mm512_storeu_si512(out + i, _mm512_permutex2var_epi64(h1, interleave_low, h2));
        _mm512_storeu_si512(out + i + 4, _mm512_permutex2var_epi64(h1, interleave_high, h2));
    }
}

}  // namespace
#endif

void hash_keys(const std::byte* first, std::size_t stride, std::size_t count, std::uint64_t seed,
               Hash128* out, bool vector) noexcept {
    std::size_t done = 0;
#if defined(__x86_64__)
    if (vector) {
        done = count - count % 8;
        hash_keys_avx512(first, stride, done, seed, out);
    }
#else
    (void)vector;
#endif
    for (std::size_t i = done; i < count; ++i) {
        const XXH128_hash_t h = XXH3_128bits_withSeed(first + i * stride, sizeof(FlowKey), seed);
        out[i] = Hash128{h.low64, h.high64};
    }
}

std::uint64_t hash64(const void* data, std::size_t size, std::uint64_t seed) noexcept {
    return XXH3_64bits_withSeed(data, size, seed);
}

}  // namespace flowsketch::core
