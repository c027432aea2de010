// The text format: a report as a table for a person.
#pragma once

#include <string>

#include "reports/report.hpp"

namespace flowsketch::reports {

/// The text form of one report, ending with a blank line.
std::string to_text(const Report& report);

}  // namespace flowsketch::reports
