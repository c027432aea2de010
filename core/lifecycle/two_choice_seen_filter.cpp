#include "core/lifecycle/two_choice_seen_filter.hpp"

#include "core/sketch/two_choice_bloom_filter.hpp"

namespace flowsketch::core::lifecycle {

bool TwoChoiceSeenFilter::contains(const Hash128& hash,
                                   const GenerationClock& clock) const noexcept {
    std::uint64_t pos[max_probes];
    cells_.generate(hash, pos);
    if (cells_.scan(pos, clock).max_age != dead) return true;
    cells_.generate(second_group(hash), pos);
    return cells_.scan(pos, clock).max_age != dead;
}

double TwoChoiceSeenFilter::fpr() const noexcept {
    const double fill = static_cast<double>(cells_.nonzero()) / static_cast<double>(cells_.cells());
    return two_choice_false_positive_rate(fill, cells_.k(), 2);
}

}  // namespace flowsketch::core::lifecycle
