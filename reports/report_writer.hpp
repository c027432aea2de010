// Where reports go: a writer receives every report of a run in order, then
// finish() once after the final report.
#pragma once

#include <memory>
#include <vector>

#include "reports/report.hpp"

namespace flowsketch::reports {

class ReportWriter {
public:
    virtual ~ReportWriter() = default;
    /// Writes one report. Throws std::runtime_error when the output fails.
    virtual void write(const Report& report) = 0;
    /// After the last report: a format with a closing part writes it.
    virtual void finish() {}
};

/// Writes each report to every writer in turn.
std::unique_ptr<ReportWriter> make_tee_writer(std::vector<std::unique_ptr<ReportWriter>> writers);

}  // namespace flowsketch::reports
