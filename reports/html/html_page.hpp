// The HTML report as one self-contained page: the interval series as line
// charts with their bounds, the latest report's heavy hitters as bars with
// error bars, distinct counts, what changed, drops, skips, warnings and the
// run's parameters. Inline CSS and SVG; a Content-Security-Policy forbids any
// request, and every string that comes from traffic or the command line is
// escaped. docs/html-report.md describes each part.
#pragma once

#include <string>
#include <vector>

#include "reports/html/interval_history.hpp"
#include "reports/report.hpp"

namespace flowsketch::reports::html {

/// What the page says about where the reports came from.
struct RunDescription {
    std::vector<std::string> inputs;  // e.g. "file a.pcap", "interface eth0"
    std::string filter;               // the BPF expression, or ""
};

/// The page for `latest` (the report just written), the series in `history`
/// and, when one was seen, the last interval report (its "what changed").
std::string render_page(const RunDescription& run, const IntervalHistory& history, const Report& latest,
                        const Report* last_interval);

}  // namespace flowsketch::reports::html
