// The blocked layout, shared by the blocked seen filter, the ended filter at
// its positions and the sizing search: a flow's k probes fall in one block
// of 128 cells (one 64-byte line of 4-bit cells), and a filter's
// false-positive rate is exact from a histogram of its blocks' fills.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "core/lifecycle/stamps.hpp"

namespace flowsketch::core {

/// Cells per block of the blocked filter: 128 cells of 4 bits fill one 64-byte cache line.
inline constexpr std::uint32_t lifecycle_block_cells = 128;

namespace lifecycle {

inline constexpr std::uint32_t block_words = lifecycle_block_cells / 16;  // 8 words of 16 cells
inline constexpr std::uint32_t offsets_per_word = 64 / 7;           // 7-bit offsets in the block
inline constexpr std::uint64_t block_salt = 0x6c6966652d626c6bULL;  // "life-blk"

/// A flow's k offsets in its block: consecutive 7-bit fields of the offsets
/// word (9 per word), further words by remixing the last.
template <class Visit>
void for_each_block_offset(std::uint64_t word, std::uint32_t k, Visit visit) noexcept {
    for (std::uint32_t i = 0;;) {
        const std::uint32_t end = std::min(k, i + offsets_per_word);
        for (std::uint64_t bits = word; i < end; ++i, bits >>= 7) {
            visit(static_cast<std::uint32_t>(bits & (lifecycle_block_cells - 1)));
        }
        if (i == k) return;
        word = mix64(word + block_salt);
    }
}

/// How many blocks have j non-zero cells (or set bits), j = 0..128.
using FillHistogram = std::array<std::uint64_t, lifecycle_block_cells + 1>;
/// (j/128)^k for j = 0..128.
using FillPowers = std::array<double, lifecycle_block_cells + 1>;

/// (j/128)^k: the chance that k probes of a fresh key all hit non-zero cells
/// of a block with j of them.
inline FillPowers block_fill_powers(std::uint32_t k) {
    FillPowers powers{};
    for (std::uint32_t j = 0; j <= lifecycle_block_cells; ++j) {
        powers[j] = std::pow(static_cast<double>(j) / lifecycle_block_cells, k);
    }
    return powers;
}

/// q = 1 − (1 − 1/128)^k: the chance that a flow probes a given cell of its block.
inline double block_hit_probability(std::uint32_t k) {
    return -std::expm1(k * std::log1p(-1.0 / lifecycle_block_cells));
}

/// A fresh key's probes are uniform in a uniform block, so it is a false
/// positive with probability (1/β)·Σ_blocks (fill of the block)^k.
inline double block_fill_rate(const FillHistogram& blocks_by_fill, const FillPowers& powers,
                              std::uint64_t blocks) noexcept {
    double sum = 0.0;
    for (std::uint32_t j = 1; j <= lifecycle_block_cells; ++j) {
        sum += static_cast<double>(blocks_by_fill[j]) * powers[j];
    }
    return sum / static_cast<double>(blocks);
}

}  // namespace lifecycle
}  // namespace flowsketch::core
