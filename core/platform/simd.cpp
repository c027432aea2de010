// The vector kernels and the CPU check (see simd.hpp). This is the only file
// that includes the AVX-512 intrinsics: gcc 12 warns (maybe-)uninitialized
// inside its own intrinsic headers when they are inlined at -O1 (the
// sanitizer build; the self-initialised `_mm512_undefined_epi32()` of GCC bug
// 105593, fixed in gcc 13), so the warnings are off here and nowhere else.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "core/platform/simd.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace flowsketch::core::simd {
namespace {

Level detect() noexcept {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
        return Level::avx512;
    }
#endif
    return Level::portable;
}

Level initial() noexcept {
    const char* wanted = std::getenv("FLOWSKETCH_SIMD");
    if (wanted != nullptr && std::strcmp(wanted, "portable") == 0) return Level::portable;
    return supported();
}

std::atomic<Level>& active() noexcept {
    static std::atomic<Level> level{initial()};
    return level;
}

}  // namespace

Level supported() noexcept {
    static const Level best = detect();
    return best;
}

Level level() noexcept { return active().load(std::memory_order_relaxed); }

Level set_level(Level wanted) noexcept {
    const Level level = wanted == Level::avx512 ? supported() : Level::portable;
    active().store(level, std::memory_order_relaxed);
    return level;
}

std::string_view level_name(Level level) noexcept {
    return level == Level::avx512 ? "avx512" : "portable";
}

#if defined(__x86_64__)

#define FLOWSKETCH_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,popcnt")))

namespace {

FLOWSKETCH_AVX512 inline __m512i splat(std::uint64_t v) noexcept {
    return _mm512_set1_epi64(static_cast<long long>(v));
}

// 64×64→128-bit products in eight lanes. AVX-512 multiplies 32×32→64 bits
// only: with a = a1·2^32 + a0 and b likewise, a·b = a1·b1·2^64 +
// (a0·b1 + a1·b0)·2^32 + a0·b0, the middle column's carries going to the high half.
struct WideProduct {
    __m512i low;
    __m512i high;
};
FLOWSKETCH_AVX512 inline WideProduct multiply_wide(__m512i a, __m512i b) noexcept {
    const __m512i low32 = splat(0xffffffff);
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

// Eight 64-bit words at `base + lane·stride` (gathered).
FLOWSKETCH_AVX512 inline __m512i gather(const std::byte* base, __m512i offsets) noexcept {
    return _mm512_i64gather_epi64(offsets, base, 1);
}

FLOWSKETCH_AVX512 inline __m512i lane_offsets(std::size_t stride) noexcept {
    const auto st = static_cast<long long>(stride);
    return _mm512_set_epi64(7 * st, 6 * st, 5 * st, 4 * st, 3 * st, 2 * st, st, 0);
}

// mod_by_reciprocal in eight lanes: the same quotient estimate, the same two
// corrections, so the same remainders.
FLOWSKETCH_AVX512 inline __m512i mod_width(__m512i x, __m512i w, __m512i reciprocal) noexcept {
    __m512i r = _mm512_sub_epi64(x, _mm512_mullo_epi64(multiply_wide(x, reciprocal).high, w));
    r = _mm512_mask_sub_epi64(r, _mm512_cmpge_epu64_mask(r, w), r, w);
    return _mm512_mask_sub_epi64(r, _mm512_cmpge_epu64_mask(r, w), r, w);
}

// x mod w for widths 16 ≤ w ≤ 2^20, in double precision: with x = a·2^32 + b,
// y = a·(2^32 mod w) + b ≡ x (mod w) and y < 2^53, so y is exact as a double;
// q = ⌊y·(1/w)⌋ is within one of ⌊y/w⌋ (the product's error is below 2/w ≤
// 1/8), y − q·w is exact in one fused multiply-add, and one correction each
// way makes it the remainder. The same remainders as mod_width in about half
// the instructions (AVX-512 has no 64-bit high multiply to emulate here).
// The corrections are for safety: the floor is off only when y·(1/w) rounds
// across an integer, which the tests' extreme and random hashes never made it do.
struct SmallWidth {
    __m512i w;
    __m512d w_d;
    __m512d inverse;
    __m512i two32_mod_w;
};
FLOWSKETCH_AVX512 inline __m512i mod_small_width(__m512i x, const SmallWidth& sw) noexcept {
    const __m512i y = _mm512_add_epi64(_mm512_mul_epu32(_mm512_srli_epi64(x, 32), sw.two32_mod_w),
                                       _mm512_and_si512(x, splat(0xffffffff)));
    const __m512d yd = _mm512_cvtepu64_pd(y);
    const __m512d q = _mm512_roundscale_pd(_mm512_mul_pd(yd, sw.inverse), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    __m512i r = _mm512_cvtpd_epi64(_mm512_fnmadd_pd(q, sw.w_d, yd));  // in [−w, 2w)
    r = _mm512_mask_add_epi64(r, _mm512_cmplt_epi64_mask(r, _mm512_setzero_si512()), r, sw.w);
    return _mm512_mask_sub_epi64(r, _mm512_cmpge_epi64_mask(r, sw.w), r, sw.w);
}

// x mod sw.w by the path its width allows: the same remainders either way.
FLOWSKETCH_AVX512 inline __m512i mod_any_width(__m512i x, bool small, const SmallWidth& sw,
                                               __m512i reciprocal) noexcept {
    return small ? mod_small_width(x, sw) : mod_width(x, sw.w, reciprocal);
}

FLOWSKETCH_AVX512 inline __m512i add_mod(__m512i g, __m512i step, __m512i w) noexcept {
    const __m512i sum = _mm512_add_epi64(g, step);
    return _mm512_mask_sub_epi64(sum, _mm512_cmpge_epu64_mask(sum, w), sum, w);
}

// XXH3_mul128_fold64: the 128-bit product's halves, XORed.
FLOWSKETCH_AVX512 inline __m512i mul128_fold64(__m512i a, __m512i b) noexcept {
    const WideProduct product = multiply_wide(a, b);
    return _mm512_xor_si512(product.low, product.high);
}

FLOWSKETCH_AVX512 inline __m512i avalanche(__m512i h) noexcept {  // XXH3_avalanche
    h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 37));
    h = _mm512_mullo_epi64(h, splat(0x165667919E3779F9ULL));
    return _mm512_xor_si512(h, _mm512_srli_epi64(h, 32));
}

}  // namespace

// The block as two byte vectors, the even cells (low nibbles) and the odd ones
// (high nibbles), so each probe set is a byte mask; one masked compare per
// half finds stale and zero cells, one ternary-logic select writes the stamp.
FLOWSKETCH_AVX512 inline BlockRefresh refresh_block_masks(std::uint64_t* block, __mmask64 even,
                                                          __mmask64 odd, std::uint32_t stamp) noexcept {
    const __m512i cells = _mm512_load_si512(block);
    const __m512i low_nibbles = _mm512_set1_epi8(0x0f);
    const __m512i low = _mm512_and_si512(cells, low_nibbles);
    const __m512i high = _mm512_and_si512(_mm512_srli_epi16(cells, 4), low_nibbles);
    const __m512i stamps = _mm512_set1_epi8(static_cast<char>(stamp));
    const __mmask64 stale = _mm512_mask_cmpneq_epi8_mask(even, low, stamps) |
                            _mm512_mask_cmpneq_epi8_mask(odd, high, stamps);
    BlockRefresh result;
    if (stale == 0) {
        result.current = true;
        return result;
    }
    const __mmask64 zero_low = _mm512_mask_testn_epi8_mask(even, low, low);
    const __mmask64 zero_high = _mm512_mask_testn_epi8_mask(odd, high, high);
    result.fresh = static_cast<std::uint32_t>(__builtin_popcountll(zero_low) +
                                              __builtin_popcountll(zero_high));
    const __m512i probed = _mm512_or_si512(
        _mm512_maskz_mov_epi8(even, low_nibbles),
        _mm512_maskz_mov_epi8(odd, _mm512_set1_epi8(static_cast<char>(0xf0))));
    const __m512i stamp_pairs = _mm512_set1_epi8(static_cast<char>(stamp * 0x11));
    // probed ? stamp_pairs : cells, bit by bit (truth table 0xac over probed, cells, stamp_pairs).
    _mm512_store_si512(block, _mm512_ternarylogic_epi64(probed, cells, stamp_pairs, 0xac));
    return result;
}

FLOWSKETCH_AVX512 BlockRefresh refresh_block_avx512(std::uint64_t* block, std::uint64_t even,
                                                    std::uint64_t odd, std::uint32_t stamp) noexcept {
    return refresh_block_masks(block, even, odd, stamp);
}

// The k offsets in eight lanes at once (a variable shift each), their cells'
// bytes as single bits, and the even and odd cells' bits ORed across lanes:
// a scalar loop takes a dependent chain of about ten instructions per probe.
FLOWSKETCH_AVX512 BlockRefresh refresh_block_offsets_avx512(std::uint64_t* block, std::uint64_t offsets,
                                                            std::uint32_t k, std::uint32_t stamp) noexcept {
    const __m512i shifts = _mm512_set_epi64(49, 42, 35, 28, 21, 14, 7, 0);
    const __m512i cell = _mm512_and_si512(_mm512_srlv_epi64(splat(offsets), shifts), splat(127));
    const __m512i bit = _mm512_sllv_epi64(splat(1), _mm512_srli_epi64(cell, 1));
    const auto probes = static_cast<__mmask8>((1u << k) - 1);
    const __mmask8 odd_lanes = _mm512_mask_test_epi64_mask(probes, cell, splat(1));
    const auto even_lanes = static_cast<__mmask8>(probes & ~odd_lanes);
    const std::uint64_t even = static_cast<std::uint64_t>(_mm512_mask_reduce_or_epi64(even_lanes, bit));
    const std::uint64_t odd = static_cast<std::uint64_t>(_mm512_mask_reduce_or_epi64(odd_lanes, bit));
    return refresh_block_masks(block, even, odd, stamp);
}

FLOWSKETCH_AVX512 void count_min_add4_avx512(std::uint64_t* counters, std::uint64_t row_stride,
                                             std::uint32_t depth, const std::uint32_t* columns,
                                             const std::uint64_t* weights, std::uint64_t* totals,
                                             std::uint64_t* estimates) noexcept {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(weights));
    auto* total = reinterpret_cast<__m256i*>(totals);
    _mm256_storeu_si256(total, _mm256_add_epi64(_mm256_loadu_si256(total), w));
    __m256i minimum = _mm256_set1_epi64x(-1);
    for (std::uint32_t row = 0; row < depth; ++row) {
        auto* cell = reinterpret_cast<__m256i*>(counters + row * row_stride +
                                                std::uint64_t{columns[row]} * 4);
        const __m256i value = _mm256_add_epi64(_mm256_load_si256(cell), w);
        _mm256_store_si256(cell, value);
        minimum = _mm256_min_epu64(minimum, value);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(estimates), minimum);
}

// Rows in registers (lane = hash), then written hash by hash, four columns each.
FLOWSKETCH_AVX512 void count_min_columns4_avx512(const std::byte* first, std::size_t stride,
                                                 std::size_t count, std::uint64_t width,
                                                 std::uint64_t reciprocal, std::uint32_t* out) noexcept {
    const __m512i offsets = lane_offsets(stride);
    const __m512i w = splat(width);
    const __m512i rec = splat(reciprocal);
    // Output position k (hash k / 4, row k % 4) takes lane k / 4 of row k % 4:
    // rows 0 and 1 are the halves of the first source, rows 2 and 3 of the second.
    const __m512i first_four = _mm512_set_epi32(27, 19, 11, 3, 26, 18, 10, 2, 25, 17, 9, 1, 24, 16, 8, 0);
    const __m512i last_four = _mm512_set_epi32(31, 23, 15, 7, 30, 22, 14, 6, 29, 21, 13, 5, 28, 20, 12, 4);
    const bool small = width >= 16 && width <= (std::uint64_t{1} << 20);
    const SmallWidth sw{w, _mm512_set1_pd(static_cast<double>(width)),
                        _mm512_set1_pd(1.0 / static_cast<double>(width)),
                        splat((std::uint64_t{1} << 32) % width)};
    for (std::size_t i = 0; i + 8 <= count; i += 8) {
        const std::byte* base = first + i * stride;
        const __m512i step = mod_any_width(gather(base + 8, offsets), small, sw, rec);
        const __m512i g0 = mod_any_width(gather(base, offsets), small, sw, rec);
        const __m512i g1 = add_mod(g0, step, w);
        const __m512i g2 = add_mod(g1, step, w);
        const __m512i g3 = add_mod(g2, step, w);
        const __m512i rows01 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi64_epi32(g0)),
                                                  _mm512_cvtepi64_epi32(g1), 1);
        const __m512i rows23 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi64_epi32(g2)),
                                                  _mm512_cvtepi64_epi32(g3), 1);
        _mm512_storeu_si512(out + i * 4, _mm512_permutex2var_epi32(rows01, first_four, rows23));
        _mm512_storeu_si512(out + i * 4 + 16, _mm512_permutex2var_epi32(rows01, last_four, rows23));
    }
}

// XXH3_len_17to128_128b for len = 40: two XXH128_mix32B rounds over the key's
// words w0..w4, then the 128-bit finalisation; one key per lane.
FLOWSKETCH_AVX512 void hash_keys40_avx512(const std::byte* first, std::size_t stride,
                                          std::size_t count, std::uint64_t seed,
                                          const std::uint64_t* secret, std::uint64_t* out) noexcept {
    constexpr std::uint64_t prime64_1 = 0x9E3779B185EBCA87ULL;
    constexpr std::uint64_t prime64_2 = 0xC2B2AE3D27D4EB4FULL;
    constexpr std::uint64_t prime64_4 = 0x85EBCA77C2B2AE63ULL;
    const __m512i c0 = splat(secret[0] + seed), c1 = splat(secret[1] - seed),
                  c2 = splat(secret[2] + seed), c3 = splat(secret[3] - seed),
                  c4 = splat(secret[4] + seed), c5 = splat(secret[5] - seed),
                  c6 = splat(secret[6] + seed), c7 = splat(secret[7] - seed);
    const __m512i offsets = lane_offsets(stride);
    const __m512i len_p1 = splat(40 * prime64_1);
    const __m512i tail = splat((40 - seed) * prime64_2);
    const __m512i interleave_low = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0);
    const __m512i interleave_high = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
    for (std::size_t i = 0; i + 8 <= count; i += 8) {
        const std::byte* base = first + i * stride;
        const __m512i w0 = gather(base, offsets);
        const __m512i w1 = gather(base + 8, offsets);
        const __m512i w2 = gather(base + 16, offsets);
        const __m512i w3 = gather(base + 24, offsets);
        const __m512i w4 = gather(base + 32, offsets);
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
            _mm512_add_epi64(_mm512_mullo_epi64(lo, splat(prime64_1)),
                             _mm512_mullo_epi64(hi, splat(prime64_4))),
            tail);
        const __m512i h2 = _mm512_sub_epi64(_mm512_setzero_si512(), avalanche(h2_pre));
        _mm512_storeu_si512(out + 2 * i, _mm512_permutex2var_epi64(h1, interleave_low, h2));
        _mm512_storeu_si512(out + 2 * i + 8, _mm512_permutex2var_epi64(h1, interleave_high, h2));
    }
}

#else  // no AVX-512 on this architecture: level() is always portable and
       // nothing calls these.

BlockRefresh refresh_block_avx512(std::uint64_t*, std::uint64_t, std::uint64_t, std::uint32_t) noexcept {
    std::abort();
}
BlockRefresh refresh_block_offsets_avx512(std::uint64_t*, std::uint64_t, std::uint32_t, std::uint32_t) noexcept {
    std::abort();
}
void count_min_add4_avx512(std::uint64_t*, std::uint64_t, std::uint32_t, const std::uint32_t*,
                           const std::uint64_t*, std::uint64_t*, std::uint64_t*) noexcept {
    std::abort();
}
void count_min_columns4_avx512(const std::byte*, std::size_t, std::size_t, std::uint64_t,
                               std::uint64_t, std::uint32_t*) noexcept {
    std::abort();
}
void hash_keys40_avx512(const std::byte*, std::size_t, std::size_t, std::uint64_t,
                        const std::uint64_t*, std::uint64_t*) noexcept {
    std::abort();
}

#endif

}  // namespace flowsketch::core::simd

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
