// Plain SVG charts for the HTML report, written as text: a line chart with
// error bands and a horizontal bar chart with error bars. No script draws
// them, so the page needs nothing beyond itself. Every label is escaped.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace flowsketch::reports::html {

/// `text` with &, <, >, " and ' replaced by entities: safe in element
/// content and in quoted attribute values.
std::string escape(std::string_view text);

/// A value for people: 1234 → "1.23k", 5e6 → "5M" (three significant digits).
std::string short_number(double value);

struct Series {
    std::string name;
    std::string color;           // a CSS colour, e.g. "#1f77b4"
    std::vector<double> values;  // one per x
    /// The band drawn around the line: both empty (no band), or one per x.
    std::vector<double> lower;
    std::vector<double> upper;
};

struct LineChart {
    std::string id;     // the <svg>'s id, stable across runs
    std::string title;  // drawn above the plot
    std::vector<double> x;  // Unix seconds, ascending
    std::vector<Series> series;
};

/// An <svg> element: axes from 0 to the largest value or bound, UTC time on x,
/// each series a line (points marked when there are few), its band shaded.
/// No points: the axes and "no data yet".
std::string render_line_chart(const LineChart& chart);

struct Bar {
    std::string label;  // e.g. "tcp 10.0.0.1:80 → 10.0.0.2:5000"
    double estimate = 0;
    double lower = 0;        // the whisker runs from lower to estimate
    bool flagged = false;    // drawn hatched, with a note in its tooltip
};

struct BarChart {
    std::string id;
    std::string title;
    std::string unit;  // "packets", "bytes"
    std::vector<Bar> bars;  // largest first, drawn top to bottom
};

/// An <svg> element: one horizontal bar per row, its length the estimate, a
/// whisker from the lower bound to the estimate. No rows: "none".
std::string render_bar_chart(const BarChart& chart);

}  // namespace flowsketch::reports::html
