// The blocked seen filter (the default; Putze–Sanders–Singler's blocked Bloom
// filter with stamp cells): a flow's k probes fall in one block of 128 cells,
// one 64-byte line, chosen by h1; each probe is uniform in the block. One
// cache miss per new flow instead of k, for about a third more cells at the
// same rate. n̂ keeps the standard form with k/m replaced by p = q/β (q the
// chance a flow probes a given cell of its block, β blocks); its variance
// gains a term for the spread of block loads; f is the mean of (fill of
// block)^k over blocks, exact from a histogram of block fills.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/lifecycle/block_layout.hpp"
#include "core/lifecycle/seen_filter.hpp"
#include "core/platform/cache_aligned.hpp"
#include "core/platform/simd.hpp"

namespace flowsketch::core::lifecycle {

class BlockedSeenFilter {
public:
    static constexpr SeenFilterKind kind = SeenFilterKind::blocked;
    /// Two lines per packet (the block and its fill count), not k: further ahead.
    static constexpr std::size_t prefetch_lookahead = 16;
    static constexpr bool prefetch_reads_recent = false;
    static constexpr bool counts_tokens = false;

    /// The kernels are chosen here, once: simd::level() at construction.
    BlockedSeenFilter(const FlowLifecycleSizing& sizing, std::uint64_t seed1, std::uint64_t seed2);

    /// The block is ⌊h1·β/2^64⌋, the offsets consecutive 7-bit fields of h2.
    /// The block depends on the top bits of h1 only, so offsets and block are
    /// independent, and each probe is uniform over its block's 128 cells.
    struct Probes {
        std::uint64_t first = 0;    // the block's first cell
        std::uint64_t offsets = 0;  // 7-bit offsets in the block (for_each_block_offset)
    };
    Probes locate(const Hash128& hash) const noexcept {
        return Probes{reduce(hash.h1 ^ seed1_, blocks_) * lifecycle_block_cells, hash.h2 ^ seed2_};
    }
    /// The block, its fill count and the flow's recent-table slot, whether or
    /// not the flow is recent: a branch on the table is as unpredictable as a
    /// flood's share of the packets and costs more than the line.
    FLOWSKETCH_PREFETCH void prefetch(const Hash128& hash, const RecentFlowTable& recent) const noexcept {
        const Probes probes = locate(hash);
        __builtin_prefetch(&words_[probes.first >> 4], 1, 3);
        __builtin_prefetch(&block_nonzero_[probes.first / lifecycle_block_cells], 1, 3);
        __builtin_prefetch(&recent.slot(hash), 0, 3);
    }
    SeenRefresh refresh(const Hash128& hash, const GenerationClock& clock, bool ends,
                        std::uint64_t* positions) noexcept {
        const Probes probes = locate(hash);
        const SeenRefresh r = refresh_block(probes, clock.current());
        if (ends) generate(probes, positions);
        return r;
    }
    bool contains(const Hash128& hash, const GenerationClock& clock) const noexcept;

    std::uint64_t cells() const noexcept { return m_; }
    std::uint64_t nonzero() const noexcept { return nonzero_; }
    double fpr() const noexcept { return block_fill_rate(fill_blocks_, fill_power_, blocks_); }
    /// n̂ = ln(Z/m) / ln(1 − q/β).
    double estimate(double zeros) const noexcept;
    double estimate_variance(double zeros) const noexcept;
    std::uint64_t clear_stamp(std::uint32_t stamp) noexcept;
    void clear_all() noexcept;
    std::uint64_t blocks() const noexcept { return blocks_; }
    /// (j/128)^k, which the ended filter at these positions shares.
    const FillPowers& fill_powers() const noexcept { return fill_power_; }
    std::size_t memory_bytes() const noexcept {
        return words_.capacity() * sizeof(std::uint64_t) + block_nonzero_.capacity();
    }

private:
    void generate(const Probes& probes, std::uint64_t* out) const noexcept {
        std::uint32_t i = 0;
        for_each_block_offset(probes.offsets, k_,
                              [&](std::uint32_t offset) { out[i++] = probes.first + offset; });
    }
    // The whole block at once (its words, or one AVX-512 register): the same
    // result as scanning and writing probe by probe, without the chain of
    // loads and stores through the same words.
    SeenRefresh refresh_block(const Probes& probes, std::uint32_t stamp) noexcept {
        std::uint64_t* cells = &words_[probes.first >> 4];
        const simd::BlockRefresh refresh = vector_kernels_
                                               ? refresh_block_vector(cells, probes.offsets, stamp)
                                               : refresh_block_words(cells, probes.offsets, stamp);
        SeenRefresh result;
        if (refresh.current) {
            result.current = true;
            return result;
        }
        const std::uint32_t fresh = refresh.fresh;
        result.is_new = fresh != 0;
        if (!result.is_new) return result;
        nonzero_ += fresh;
        std::uint8_t& fill = block_nonzero_[probes.first / lifecycle_block_cells];
        --fill_blocks_[fill];
        fill = static_cast<std::uint8_t>(fill + fresh);
        ++fill_blocks_[fill];
        return result;
    }
    simd::BlockRefresh refresh_block_words(std::uint64_t* cells, std::uint64_t offsets,
                                           std::uint32_t stamp) const noexcept;
    simd::BlockRefresh refresh_block_vector(std::uint64_t* cells, std::uint64_t offsets,
                                            std::uint32_t stamp) const noexcept;

    std::uint64_t m_;
    std::uint32_t k_;
    std::uint64_t blocks_;  // β
    std::uint64_t seed1_, seed2_;
    bool vector_kernels_;  // simd::level() was avx512 at construction
    double log_spared_;    // ln(1 − q/β): a flow spares a given cell with probability 1 − q/β
    double block_hit_;     // q = 1 − (1 − 1/128)^k
    double pair_exponent_;  // 2 − (1 − (1 − 2/128)^k)/q (estimate_variance)
    CacheAlignedVector<std::uint64_t> words_;  // 16 cells of 4 bits per word; a block is a line
    std::vector<std::uint8_t> block_nonzero_;  // non-zero cells per block (0..128)
    std::uint64_t nonzero_ = 0;
    FillHistogram fill_blocks_{};  // blocks by non-zero cells
    FillPowers fill_power_{};
};

static_assert(SeenFilter<BlockedSeenFilter>);

// Portable: a nibble mask of the probed cells, then one test of every word
// for a probed zero (new flow) and for a probed cell not holding the current
// stamp, and one masked write.
inline simd::BlockRefresh BlockedSeenFilter::refresh_block_words(
    std::uint64_t* cells, std::uint64_t offsets, std::uint32_t stamp) const noexcept {
    std::uint64_t mask[block_words] = {};
    for_each_block_offset(offsets, k_, [&](std::uint32_t offset) {
        mask[offset >> 4] |= std::uint64_t{15} << ((offset & 15) << 2);
    });
    const std::uint64_t stamps = nibble_ones * stamp;
    std::uint64_t stale = 0;
    std::uint64_t zeros = 0;  // per nibble: in how many words a probed cell is zero
    for (std::uint32_t w = 0; w < block_words; ++w) {
        stale |= (cells[w] ^ stamps) & mask[w];
        zeros += ~nonzero_nibbles(cells[w]) & mask[w] & nibble_ones;
    }
    simd::BlockRefresh result;
    if (stale == 0) {
        result.current = true;
        return result;
    }
    for (std::uint32_t w = 0; w < block_words; ++w)
        cells[w] = (cells[w] & ~mask[w]) | (stamps & mask[w]);
    result.fresh = sum_of_nibbles(zeros);
    return result;
}

// AVX-512: the probed cells as two 64-bit sets, even and odd cells (a byte of
// the block holds cell 2j in its low nibble, 2j + 1 in its high one), built in
// registers without the mask's stores; the kernel does the rest in one
// register. Up to 8 probes (the default sizing's k) the kernel builds the sets
// itself from the offsets word, eight lanes at once; more take the loop here.
// Same cells and result as refresh_block_words.
inline simd::BlockRefresh BlockedSeenFilter::refresh_block_vector(
    std::uint64_t* cells, std::uint64_t offsets, std::uint32_t stamp) const noexcept {
    if (k_ <= 8) return simd::refresh_block_offsets_avx512(cells, offsets, k_, stamp);
    std::uint64_t even = 0;
    std::uint64_t odd = 0;
    for_each_block_offset(offsets, k_, [&](std::uint32_t offset) {
        const std::uint64_t bit = std::uint64_t{1} << (offset >> 1);
        const std::uint64_t is_odd = std::uint64_t{0} - (offset & 1);
        odd |= bit & is_odd;
        even |= bit & ~is_odd;
    });
    return simd::refresh_block_avx512(cells, even, odd, stamp);
}

}  // namespace flowsketch::core::lifecycle
