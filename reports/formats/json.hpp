// The JSON Lines format. The field set is a contract (docs/report-json.md):
// fields may be added, never renamed or dropped.
#pragma once

#include <string>

#include "reports/report.hpp"

namespace flowsketch::reports {

/// The JSON form of one report (one line, no trailing newline).
std::string to_json(const Report& report);

}  // namespace flowsketch::reports
