// A chart of numbers against numbers, as SVG text: linear axes, each series
// drawn as bars (a histogram's), a line, or marked points. What the lab's
// figures need (a distribution beside the curves fitted to it, measured
// values against the papers' or a bound) and the report's charts, whose x is
// time, do not offer. No script draws it; every label is escaped.
#pragma once

#include <string>
#include <vector>

namespace flowsketch::reports::html {

struct XySeries {
    enum class Style { bars, line, points };
    std::string name;
    std::string color;  // a CSS colour
    Style style = Style::line;
    std::vector<double> x;
    std::vector<double> y;  // one per x; non-finite values are left out
};

struct XyChart {
    std::string id;  // the <svg>'s id, stable across runs
    std::string title;
    std::string x_label;
    std::string y_label;
    /// A logarithmic y axis, decade to decade (values ≤ 0 are left out), for
    /// numbers orders of magnitude apart, such as a rate and its bound.
    bool log_y = false;
    std::vector<XySeries> series;
};

/// An <svg> element: x from the smallest to the largest x of any series (bars
/// get half a step of room), y from 0 to the largest y (log_y: the decades
/// around them), ticks on each, the legend on the title's line. No finite
/// point: the axes and "no data".
std::string render_xy_chart(const XyChart& chart);

}  // namespace flowsketch::reports::html
