#include "reports/number_format.hpp"

#include <algorithm>
#include <cmath>

namespace flowsketch::reports {

std::string with_separators(std::uint64_t value) {
    const std::string digits = std::to_string(value);
    std::string out;
    out.reserve(digits.size() + digits.size() / 3);
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
        out.push_back(digits[i]);
    }
    return out;
}

std::string rounded(double value) {
    if (!std::isfinite(value)) return "∞";
    return with_separators(static_cast<std::uint64_t>(std::llround(std::max(value, 0.0))));
}

}  // namespace flowsketch::reports
