// Vector kernels for the hottest per-packet work, chosen at run time.
//
// The program is built for the x86-64 baseline (SSE2), as Debian builds, so
// the portable code of each structure is the reference and runs everywhere.
// Where the CPU has AVX-512 (F, BW, VL, DQ: Skylake-SP and later Xeons, Zen 4
// and later), a structure built while that level is active uses these kernels
// instead: same cells, same answers, fewer instructions. A 64-byte lifecycle
// block is one register, a 4-lane Count-Min cell is one 256-bit register, and
// the flow keys are hashed eight at a time (core/key/hash.hpp, hash_keys).
//
// The level is process-wide (it is a property of the CPU) and read by each
// structure when it is constructed. FLOWSKETCH_SIMD=portable in the
// environment keeps the portable code (to compare the two, or to rule the
// kernels out); set_level() does the same for tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace flowsketch::core::simd {

enum class Level : std::uint8_t { portable = 0, avx512 = 1 };

/// The level structures built from now on use: the CPU's best, unless the
/// environment or set_level() asked for less.
Level level() noexcept;
/// The best level this CPU runs.
Level supported() noexcept;
/// Asks for a level; the CPU's support caps it. Returns the level now active.
Level set_level(Level wanted) noexcept;
std::string_view level_name(Level level) noexcept;

/// What one refresh of a lifecycle block found (see FlowLifecycle).
struct BlockRefresh {
    bool current = false;     // every probed cell already held the stamp: nothing written
    std::uint32_t fresh = 0;  // probed cells that were zero (now hold the stamp)
};

/// The blocked lifecycle filter's refresh of one 64-byte block of 128 4-bit
/// cells (cell i is nibble i of the block, low nibble first): if any cell
/// whose bit is set in the probe sets is not `stamp`, every such cell becomes
/// `stamp`. Cell 2j is probed when bit j of `even` is set, cell 2j + 1 when bit
/// j of `odd` is. `block` is 64-byte aligned. Only with level() == avx512.
BlockRefresh refresh_block_avx512(std::uint64_t* block, std::uint64_t even, std::uint64_t odd,
                                  std::uint32_t stamp) noexcept;
/// The same refresh with the probe sets built from `offsets`: cell
/// (offsets >> 7i) & 127 for i < k, 1 ≤ k ≤ 8 (the blocked filter's first
/// word of 7-bit offsets). Only with level() == avx512.
BlockRefresh refresh_block_offsets_avx512(std::uint64_t* block, std::uint64_t offsets,
                                          std::uint32_t k, std::uint32_t stamp) noexcept;

/// A 4-lane Count-Min update: adds weights[0..3] to the 32-byte cell at
/// `columns[row]` of every row (counters row-major, `row_stride` words apart)
/// and to `totals`, and writes each lane's minimum over the updated cells to
/// `estimates`. Cells are 32-byte aligned. Only with level() == avx512.
void count_min_add4_avx512(std::uint64_t* counters, std::uint64_t row_stride, std::uint32_t depth,
                           const std::uint32_t* columns, const std::uint64_t* weights,
                           std::uint64_t* totals, std::uint64_t* estimates) noexcept;

/// The Kirsch–Mitzenmacher columns of depth 4 (g_j = h1 + j·h2 mod w) of
/// `count` hashes (a multiple of 8), the i-th a Hash128 at `first + i·stride`
/// bytes, to out[4i .. 4i + 4): the same exact remainders as
/// mod_by_reciprocal(x, width, reciprocal). Only with level() == avx512.
void count_min_columns4_avx512(const std::byte* first, std::size_t stride, std::size_t count,
                               std::uint64_t width, std::uint64_t reciprocal,
                               std::uint32_t* out) noexcept;

/// XXH3-128 with `seed` of `count` 40-byte keys (a multiple of 8), the i-th at
/// `first + i·stride` bytes, as (low, high) pairs to out[0..2·count): XXH3's
/// 17–128-byte path written out for 40 bytes, eight keys per register.
/// `secret` is the first 64 bytes of XXH3's default secret. Only with
/// level() == avx512 (core/key/hash.hpp's hash_keys is the way in).
void hash_keys40_avx512(const std::byte* first, std::size_t stride, std::size_t count,
                        std::uint64_t seed, const std::uint64_t* secret,
                        std::uint64_t* out) noexcept;

}  // namespace flowsketch::core::simd
