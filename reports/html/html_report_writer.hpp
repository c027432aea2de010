// `--html FILE`: a writer that keeps the interval series and rewrites FILE
// whole at every report, through a temporary file in the same directory and
// rename(2), so a browser reloading it never reads half a page. Any command
// that produces Reports can tee it beside its other writers.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "reports/html/html_page.hpp"
#include "reports/html/interval_history.hpp"
#include "reports/report_writer.hpp"

namespace flowsketch::reports::html {

class HtmlReportWriter final : public ReportWriter {
public:
    /// Checks now that FILE's directory takes a file (std::runtime_error
    /// naming FILE otherwise), so a run does not fail at its first report.
    HtmlReportWriter(std::string path, RunDescription run,
                     std::size_t history_capacity = IntervalHistory::default_capacity);
    void write(const Report& report) override;

    const IntervalHistory& history() const noexcept { return history_; }

private:
    void replace_file(const std::string& page) const;

    std::string path_;
    RunDescription run_;
    IntervalHistory history_;
    std::optional<Report> last_interval_;  // its "what changed" outlives it on the page
    unsigned mode_;                        // 0666 less the umask, as open(2) would give
};

}  // namespace flowsketch::reports::html
