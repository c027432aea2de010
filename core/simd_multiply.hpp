// 64×64→128-bit products in eight AVX-512 lanes, for core's vector kernels
// (hash.cpp, count_min.cpp). AVX-512 multiplies 32×32→64 bits only: with
// a = a1·2^32 + a0 and b likewise, a·b = a1·b1·2^64 + (a0·b1 + a1·b0)·2^32 +
// a0·b0, the middle column's carries going to the high half. Include only on
// x86-64, and call only from functions compiled for AVX-512.
#pragma once

#include <immintrin.h>

namespace flowsketch::core::simd {

struct WideProduct {
    __m512i low;
    __m512i high;
};

__attribute__((target("avx512f"), always_inline)) inline WideProduct multiply_wide(__m512i a,
                                                                                   __m512i b) noexcept {
    const __m512i low32 = _mm512_set1_epi64(0xffffffff);
    const __m512i a_hi = _mm512_srli_epi64(a, 32);
    const __m512i b_hi = _mm512_srli_epi64(b, 32);
    const __m512i p00 = _mm512_mul_epu32(a, b);
    const __m512i p01 = _mm512_mul_epu32(a, b_hi);
    const __m512i p10 = _mm512_mul_epu32(a_hi, b);
    const __m512i p11 = _mm512_mul_epu32(a_hi, b_hi);
    const __m512i mid = _mm512_add_epi64(
        _mm512_add_epi64(_mm512_srli_epi64(p00, 32), _mm512_and_si512(p01, low32)),
        _mm512_and_si512(p10, low32));
    WideProduct product;
    product.high = _mm512_add_epi64(_mm512_add_epi64(p11, _mm512_srli_epi64(p01, 32)),
                                    _mm512_add_epi64(_mm512_srli_epi64(p10, 32), _mm512_srli_epi64(mid, 32)));
    product.low = _mm512_or_si512(_mm512_slli_epi64(mid, 32), _mm512_and_si512(p00, low32));
    return product;
}

}  // namespace flowsketch::core::simd
