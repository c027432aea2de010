#include "core/lifecycle/ended_filter.hpp"

#include <bit>
#include <cmath>

#include "core/lifecycle/miss_bounds.hpp"

namespace flowsketch::core::lifecycle {

EndedFilter::EndedFilter(std::uint64_t cells, std::uint32_t k, std::uint64_t blocks)
    : m_(cells), k_(k), blocks_(blocks), bits_((cells + 63) / 64) {
    if (blocks_ != 0) fill_blocks_[0] = blocks_;
}

std::uint32_t EndedFilter::block_fill(std::uint64_t block) const noexcept {
    return static_cast<std::uint32_t>(std::popcount(bits_[2 * block]) +
                                      std::popcount(bits_[2 * block + 1]));
}

void EndedFilter::note(const std::uint64_t* positions, const FillPowers* block_powers) noexcept {
    std::uint32_t fresh = 0;
    for (std::uint32_t i = 0; i < k_; ++i) {
        const std::uint64_t bit = std::uint64_t{1} << (positions[i] & 63);
        std::uint64_t& word = bits_.for_write(positions[i] >> 6);
        fresh += (word & bit) == 0 ? 1u : 0u;
        word |= bit;
    }
    ones_ += fresh;
    ++notes_;
    if (fresh == 0) return;
    ++ended_;
    if (blocks_ != 0) {  // FIN/RST packets only: popcount's library call is fine here
        const std::uint32_t now = block_fill(positions[0] / lifecycle_block_cells);
        --fill_blocks_[now - fresh];
        ++fill_blocks_[now];
    }
    if (++segment_ >= segment_flows) close_segment(block_powers);
}

double EndedFilter::fpr(const FillPowers* block_powers) const noexcept {
    if (blocks_ != 0) return block_fill_rate(fill_blocks_, *block_powers, blocks_);
    const double fill = static_cast<double>(ones_) / static_cast<double>(m_);
    return std::pow(fill, static_cast<double>(k_));
}

// f/(1 − f) per end: at the segment's close (or now, for the open one) an
// upper bound on the rate every end in it met, since bits are only set until
// the interval ends. None yet: 0 (also when f = 1, where the ratio is ∞).
double EndedFilter::segment_misses(double f) const noexcept {
    return segment_ == 0 ? 0.0 : static_cast<double>(segment_) * miss_ratio(f);
}

void EndedFilter::close_segment(const FillPowers* block_powers) noexcept {
    mu_ += segment_misses(fpr(block_powers));
    segment_ = 0;
}

double EndedFilter::undercount_bound(const FillPowers* block_powers) const noexcept {
    const double f = fpr(block_powers);  // the interval's highest: the deviation's factor
    return interval_miss_bound(mu_ + segment_misses(f), f, notes_ - ended_);
}

void EndedFilter::clear() noexcept {
    ended_ = 0;
    notes_ = 0;
    mu_ = 0.0;
    segment_ = 0;
    bits_.clear();
    ones_ = 0;
    if (blocks_ != 0) {
        fill_blocks_.fill(0);
        fill_blocks_[0] = blocks_;
    }
}

}  // namespace flowsketch::core::lifecycle
