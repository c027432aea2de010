// The output formats a run can write reports in, by name. A format renders
// each report to bytes appended to an output; the registry lists the built-in
// formats (text, json, csv) and any a program adds, so the command line, its
// help and the writers all read the one list.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "reports/report.hpp"
#include "reports/report_output.hpp"
#include "reports/report_writer.hpp"

namespace flowsketch::reports {

class ReportFormat {
public:
    virtual ~ReportFormat() = default;
    /// What opens an output (a CSV header); `output_was_empty` says whether
    /// the output is new or is being appended to.
    virtual std::string begin(bool output_was_empty) const {
        (void)output_was_empty;
        return {};
    }
    /// One report, whole.
    virtual std::string render(const Report& report) const = 0;
    /// What closes an output after the final report.
    virtual std::string finish() const { return {}; }
};

struct FormatEntry {
    std::string name;         // as given to --format
    std::string description;  // one line for --help
    std::function<std::unique_ptr<ReportFormat>()> make;
};

/// Every format, the built-in ones first, in the order they were added.
const std::vector<FormatEntry>& report_formats();
/// Adds a format (a name already taken: std::invalid_argument).
void add_report_format(FormatEntry entry);
/// The names of report_formats().
std::vector<std::string> report_format_names();

/// A writer of `format` to `output` (not owned; must outlive the writer): it
/// writes the format's opening now, each report whole, the closing on
/// finish(). Throws std::invalid_argument naming an unknown format.
std::unique_ptr<ReportWriter> make_report_writer(std::string_view format, ReportOutput& output);

// The built-in formats (reports/formats/).
FormatEntry text_format();
FormatEntry json_format();
FormatEntry csv_format();

}  // namespace flowsketch::reports
