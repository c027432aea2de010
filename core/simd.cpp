#include "core/simd.hpp"

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

// The block as two byte vectors, the even cells (low nibbles) and the odd ones
// (high nibbles), so each probe set is a byte mask; one masked blend per half
// writes the stamp, one ternary-logic select puts the nibbles back.
__attribute__((target("avx512f,avx512bw,popcnt"))) BlockRefresh refresh_block_avx512(
    std::uint64_t* block, std::uint64_t even, std::uint64_t odd, std::uint32_t stamp) noexcept {
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

__attribute__((target("avx512f,avx512vl"))) void count_min_add4_avx512(
    std::uint64_t* counters, std::uint64_t row_stride, std::uint32_t depth,
    const std::uint32_t* columns, const std::uint64_t* weights, std::uint64_t* totals,
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

#else  // no AVX-512 on this architecture: level() is always portable and
       // nothing calls these; they do the same work cell by cell.

BlockRefresh refresh_block_avx512(std::uint64_t* block, std::uint64_t even, std::uint64_t odd,
                                  std::uint32_t stamp) noexcept {
    BlockRefresh result;
    bool stale = false;
    for (std::uint32_t cell = 0; cell < 128; ++cell) {
        const std::uint64_t set = (cell & 1) != 0 ? odd : even;
        if ((set >> (cell >> 1) & 1) == 0) continue;
        const std::uint32_t shift = (cell & 15) * 4;
        std::uint64_t& word = block[cell >> 4];
        const std::uint32_t value = static_cast<std::uint32_t>(word >> shift) & 15u;
        stale = stale || value != stamp;
        result.fresh += value == 0 ? 1u : 0u;
        word = (word & ~(std::uint64_t{15} << shift)) | (std::uint64_t{stamp} << shift);
    }
    result.current = !stale;
    if (result.current) result.fresh = 0;
    return result;
}

void count_min_add4_avx512(std::uint64_t* counters, std::uint64_t row_stride, std::uint32_t depth,
                           const std::uint32_t* columns, const std::uint64_t* weights,
                           std::uint64_t* totals, std::uint64_t* estimates) noexcept {
    for (std::uint32_t lane = 0; lane < 4; ++lane) {
        totals[lane] += weights[lane];
        estimates[lane] = ~std::uint64_t{0};
    }
    for (std::uint32_t row = 0; row < depth; ++row) {
        std::uint64_t* cell = counters + row * row_stride + std::uint64_t{columns[row]} * 4;
        for (std::uint32_t lane = 0; lane < 4; ++lane) {
            cell[lane] += weights[lane];
            if (cell[lane] < estimates[lane]) estimates[lane] = cell[lane];
        }
    }
}

#endif

}  // namespace flowsketch::core::simd
