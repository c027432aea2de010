// Renderers of a Report and where they write. Every report is rendered to one
// string and handed to the output in one piece, so a reader tailing a file
// never sees half a report (a JSON line is whole or absent).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "reports/report.hpp"

namespace flowsketch::reports {

class ReportWriter {
public:
    virtual ~ReportWriter() = default;
    /// Writes one report. Throws std::runtime_error when the output fails.
    virtual void write(const Report& report) = 0;
};

enum class ReportFormat { text, json, csv };

/// Parses "text" / "json" / "csv"; throws std::invalid_argument otherwise.
ReportFormat parse_report_format(std::string_view name);

/// A file descriptor reports are written to, whole: each write(2) loop
/// finishes a report or throws naming the output (disk full, closed pipe...).
class ReportOutput {
public:
    /// Standard output (not closed).
    static std::unique_ptr<ReportOutput> standard_output();
    /// Opens `path` for appending (created 0644 if missing; O_APPEND, so
    /// concurrent appenders never interleave inside a report). Throws
    /// std::runtime_error naming the path.
    static std::unique_ptr<ReportOutput> append_to(const std::string& path);
    ~ReportOutput();
    ReportOutput(const ReportOutput&) = delete;
    ReportOutput& operator=(const ReportOutput&) = delete;

    void write(std::string_view bytes);
    /// Reopens a file output by its path (after log rotation moved it; SIGHUP).
    /// Standard output is left as it is. Throws std::runtime_error naming the path.
    void reopen();
    const std::string& name() const noexcept { return name_; }
    /// True if the output held nothing when opened (a CSV header is due).
    bool was_empty() const noexcept { return was_empty_; }

private:
    ReportOutput(int fd, std::string name, bool owned, bool was_empty);
    static int open_append(const std::string& path);
    int fd_;
    std::string name_;
    bool owned_;
    bool was_empty_;
};

/// A writer of `format` to `output` (not owned; must outlive the writer).
std::unique_ptr<ReportWriter> make_report_writer(ReportFormat format, ReportOutput& output);

/// Writes each report to every writer in turn.
std::unique_ptr<ReportWriter> make_tee_writer(std::vector<std::unique_ptr<ReportWriter>> writers);

/// The JSON Lines form of one report (no trailing newline). See docs/report-json.md.
std::string to_json(const Report& report);

/// The text form of one report for a person.
std::string to_text(const Report& report);

/// CSV: one row per heavy hitter per report (docs/report-csv.md).
std::string csv_header();
std::string to_csv_rows(const Report& report);

}  // namespace flowsketch::reports
