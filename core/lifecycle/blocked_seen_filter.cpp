#include "core/lifecycle/blocked_seen_filter.hpp"

#include <algorithm>
#include <cmath>

#include "core/sketch/probes.hpp"

namespace flowsketch::core::lifecycle {

BlockedSeenFilter::BlockedSeenFilter(const FlowLifecycleSizing& sizing, std::uint64_t seed1,
                                     std::uint64_t seed2)
    : m_(sizing.cells),
      k_(sizing.k),
      blocks_(sizing.cells / lifecycle_block_cells),
      seed1_(seed1),
      seed2_(seed2),
      vector_kernels_(simd::level() == simd::Level::avx512),
      words_(static_cast<std::size_t>((sizing.cells + 15) / 16), 0),  // m/16 words: a multiple of 8
      block_nonzero_(static_cast<std::size_t>(sizing.cells / lifecycle_block_cells), 0) {
    constexpr double b = lifecycle_block_cells;
    block_hit_ = block_hit_probability(k_);
    pair_exponent_ = 2.0 + std::expm1(k_ * std::log1p(-2.0 / b)) / block_hit_;
    log_spared_ = std::log1p(-block_hit_ / static_cast<double>(blocks_));
    fill_power_ = block_fill_powers(k_);
    fill_blocks_[0] = blocks_;
}

bool BlockedSeenFilter::contains(const Hash128& hash, const GenerationClock& clock) const noexcept {
    std::uint64_t pos[max_probes];
    generate(locate(hash), pos);
    return scan_cells(words_.data(), pos, k_, clock).max_age != dead;
}

// Z = 0 is read as Z = 1/2 (a finite "at least").
double BlockedSeenFilter::estimate(double zeros) const noexcept {
    const double z = std::max(zeros, 0.5);
    return std::log(z / static_cast<double>(m_)) / log_spared_;
}

// Var(n̂) by the delta method from Var(Z) with the number of flows fixed,
// t = ln(m/Z), B = 128 cells per block, c = pair_exponent_:
// β/(B·q²)·(e^t − 1 + (B − 1)(e^{c·t} − 1) − t·B·q); the middle term is the
// covariance of cells that share a block's load (docs/flow-lifecycle.md).
double BlockedSeenFilter::estimate_variance(double zeros) const noexcept {
    const double m = static_cast<double>(m_);
    const double t = std::log(m / std::max(zeros, 0.5));
    constexpr double b = lifecycle_block_cells;
    const double scale = static_cast<double>(blocks_) / (b * block_hit_ * block_hit_);
    return std::max(0.0, scale * (std::expm1(t) + (b - 1.0) * std::expm1(pair_exponent_ * t) -
                                  t * b * block_hit_));
}

// Block by block: the cells cleared are the drop in the block's fill, and
// only a block that lost cells moves in the fill histogram. An empty block
// stays empty: skipped.
std::uint64_t BlockedSeenFilter::clear_stamp(std::uint32_t stamp) noexcept {
    std::uint64_t cleared = 0;
    for (std::uint64_t block = 0; block < blocks_; ++block) {
        std::uint8_t& fill = block_nonzero_[block];
        if (fill == 0) continue;
        std::uint64_t* words = &words_[block * block_words];
        std::uint64_t left = 0;  // per nibble: in how many of the 8 words it leaves
        for (std::uint32_t w = 0; w < block_words; ++w) {
            const std::uint64_t leaves = nibbles_equal(words[w], stamp);
            words[w] &= ~(leaves * 15);
            left += leaves;
        }
        if (left == 0) continue;
        const std::uint32_t gone = sum_of_nibbles(left);
        cleared += gone;
        --fill_blocks_[fill];
        fill = static_cast<std::uint8_t>(fill - gone);
        ++fill_blocks_[fill];
    }
    nonzero_ -= cleared;
    return cleared;
}

void BlockedSeenFilter::clear_all() noexcept {
    std::fill(words_.begin(), words_.end(), 0);
    nonzero_ = 0;
    fill_blocks_.fill(0);
    fill_blocks_[0] = blocks_;
    std::fill(block_nonzero_.begin(), block_nonzero_.end(), 0);
}

}  // namespace flowsketch::core::lifecycle
