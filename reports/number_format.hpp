// Numbers as a person reads them in the text and HTML reports.
#pragma once

#include <cstdint>
#include <string>

namespace flowsketch::reports {

/// 1234567 as "1,234,567".
std::string with_separators(std::uint64_t value);

/// A non-negative estimate as the whole number a reader means, with
/// separators; "∞" when it is not finite (a bound with no limit).
std::string rounded(double value);

}  // namespace flowsketch::reports
