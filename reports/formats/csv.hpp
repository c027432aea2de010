// The CSV format: one row per heavy hitter per report. Columns are a contract
// (docs/report-csv.md): new columns are added at the end, never renamed,
// dropped or reordered.
#pragma once

#include <string>

#include "reports/report.hpp"

namespace flowsketch::reports {

/// The header line (with its newline).
std::string csv_header();
/// One report's rows (each with its newline).
std::string to_csv_rows(const Report& report);

}  // namespace flowsketch::reports
