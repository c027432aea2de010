// Renderers of a Report. Each writes whole reports and flushes, so a reader
// tailing the output never sees half a report.
#pragma once

#include <cstdio>
#include <memory>
#include <string_view>

#include "reports/report.hpp"

namespace flowsketch::reports {

class ReportWriter {
public:
    virtual ~ReportWriter() = default;
    /// Writes one report. Throws std::runtime_error when the output fails.
    virtual void write(const Report& report) = 0;
};

enum class ReportFormat { text, json };

/// Parses "text" / "json"; throws std::invalid_argument otherwise.
ReportFormat parse_report_format(std::string_view name);

/// Writers to `out` (not owned; must outlive the writer).
std::unique_ptr<ReportWriter> make_json_lines_writer(std::FILE* out);
std::unique_ptr<ReportWriter> make_text_writer(std::FILE* out);
/// A writer of `format` to `out` (not owned; must outlive the writer).
std::unique_ptr<ReportWriter> make_report_writer(ReportFormat format, std::FILE* out);

/// The JSON Lines form of one report (no trailing newline). See docs/report-json.md.
std::string to_json(const Report& report);

/// The text form of one report for a person.
std::string to_text(const Report& report);

}  // namespace flowsketch::reports
