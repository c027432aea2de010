#include "reports/html/xy_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <utility>
#include <vector>

#include "reports/html/svg_chart.hpp"

namespace flowsketch::reports::html {
namespace {

constexpr double chart_width = 860, plot_height = 220;
constexpr double left = 70, right = 16, bottom = 48;
constexpr double legend_line = 15;

// The smallest 1, 2 or 5 × 10^k at or above `value`: the y axis' end.
double nice_ceiling(double value) {
    if (!(value > 0) || !std::isfinite(value)) return 1;
    const double magnitude = std::pow(10.0, std::floor(std::log10(value)));
    for (const double step : {1.0, 2.0, 5.0, 10.0}) {
        if (step * magnitude >= value * (1 - 1e-12)) return step * magnitude;
    }
    return 10 * magnitude;
}

// A tick's number: short_number's "1.5k" above 1; below it, three significant
// digits (short_number would round 0.005 to "0.01").
std::string tick_label(double value) {
    return std::fabs(value) < 1 && value != 0 ? fmt::format("{:.3g}", value) : short_number(value);
}

bool finite_point(const XySeries& s, std::size_t i, bool log_y) {
    return i < s.y.size() && std::isfinite(s.x[i]) && std::isfinite(s.y[i]) && (!log_y || s.y[i] > 0);
}

}  // namespace

std::string render_xy_chart(const XyChart& chart) {
    std::string svg;
    auto out = std::back_inserter(svg);
    const double plot_right = chart_width - right;
    // The legend under the title, wrapped to the plot's width.
    std::vector<std::pair<double, double>> legend_at;  // per series: x, y
    double legend_x = left, legend_y = 34;
    for (const XySeries& s : chart.series) {
        const double width = 7.0 * static_cast<double>(s.name.size()) + 26;
        if (legend_x + width > plot_right && legend_x > left) {
            legend_x = left;
            legend_y += legend_line;
        }
        legend_at.emplace_back(legend_x, legend_y);
        legend_x += width;
    }
    const double top = legend_y + 14;
    const double plot_bottom = top + plot_height;
    const double chart_height = plot_bottom + bottom;
    fmt::format_to(out,
                   "<svg id=\"{}\" class=\"chart xy\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\">"
                   "<text class=\"title\" x=\"{}\" y=\"18\">{}</text>",
                   escape(chart.id), chart_width, chart_height, chart_width, chart_height, left, escape(chart.title));
    for (std::size_t i = 0; i < chart.series.size(); ++i) {
        const auto [x, y] = legend_at[i];
        fmt::format_to(out,
                       "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
                       "<text class=\"legend\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>",
                       x, y - 9, escape(chart.series[i].color), x + 14, y, escape(chart.series[i].name));
    }
    double x_min = std::numeric_limits<double>::infinity(), x_max = -x_min, y_max = 0;
    double y_min = std::numeric_limits<double>::infinity();  // log_y: the smallest value
    double step = std::numeric_limits<double>::infinity();  // the bars' narrowest spacing
    for (const XySeries& s : chart.series) {
        for (std::size_t i = 0; i < s.x.size(); ++i) {
            if (!finite_point(s, i, chart.log_y)) continue;
            x_min = std::min(x_min, s.x[i]);
            x_max = std::max(x_max, s.x[i]);
            y_max = std::max(y_max, s.y[i]);
            y_min = std::min(y_min, s.y[i]);
            if (s.style == XySeries::Style::bars && i > 0 && s.x[i] > s.x[i - 1]) step = std::min(step, s.x[i] - s.x[i - 1]);
        }
    }
    if (!std::isfinite(step)) step = 1;
    const bool has_bars = std::any_of(chart.series.begin(), chart.series.end(),
                                      [](const XySeries& s) { return s.style == XySeries::Style::bars; });
    if (has_bars) {
        x_min -= step / 2;
        x_max += step / 2;
    }
    // log_y: decades from below the smallest value to above the largest.
    const double decade_low = chart.log_y && std::isfinite(y_min) ? std::floor(std::log10(y_min)) : 0;
    const double decade_high = chart.log_y && y_max > 0 ? std::max(decade_low + 1, std::ceil(std::log10(y_max))) : 1;
    y_max = chart.log_y ? std::pow(10.0, decade_high) : nice_ceiling(y_max);
    const int y_ticks = chart.log_y ? static_cast<int>(std::min(decade_high - decade_low, 8.0)) : 4;
    // y: grid lines and ticks; the axis names under and beside the plot.
    for (int tick = 0; tick <= y_ticks; ++tick) {
        const double y = plot_bottom - (plot_bottom - top) * tick / y_ticks;
        const double value = chart.log_y ? std::pow(10.0, decade_low + (decade_high - decade_low) * tick / y_ticks)
                                         : y_max * tick / y_ticks;
        fmt::format_to(out,
                       "<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>"
                       "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>",
                       left, y, plot_right, y, left - 6, y + 4,
                       escape(chart.log_y ? fmt::format("{:g}", value) : tick_label(value)));
    }
    fmt::format_to(out,
                   "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>"
                   "<text class=\"tick\" x=\"14\" y=\"{:.1f}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {:.1f})\">{}</text>",
                   (left + plot_right) / 2, chart_height - 8, escape(chart.x_label), (top + plot_bottom) / 2,
                   (top + plot_bottom) / 2, escape(chart.y_label));
    if (!(x_max >= x_min)) {
        fmt::format_to(out, "<text class=\"empty\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">no data</text></svg>",
                       (left + plot_right) / 2, (top + plot_bottom) / 2);
        return svg;
    }
    const double span = x_max - x_min;
    auto px = [&](double x) { return span > 0 ? left + (plot_right - left) * (x - x_min) / span : (left + plot_right) / 2; };
    auto py = [&](double y) {
        const double share = chart.log_y ? (std::log10(y) - decade_low) / (decade_high - decade_low)
                                         : std::clamp(y, 0.0, y_max) / y_max;
        return plot_bottom - (plot_bottom - top) * std::clamp(share, 0.0, 1.0);
    };
    for (int tick = 0; tick <= 4; ++tick) {
        const double x = x_min + span * tick / 4.0;
        fmt::format_to(out, "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>", px(x),
                       plot_bottom + 16, escape(tick_label(x)));
    }
    fmt::format_to(out, "<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>", left, plot_bottom, plot_right);
    const double bar_width = span > 0 ? (plot_right - left) * step / span * 0.8 : 20;
    for (const XySeries& s : chart.series) {
        const std::string color = escape(s.color);
        const std::string name = escape(s.name);
        switch (s.style) {
            case XySeries::Style::bars:
                for (std::size_t i = 0; i < s.x.size(); ++i) {
                    if (!finite_point(s, i, chart.log_y)) continue;
                    fmt::format_to(out,
                                   "<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
                                   "fill=\"{}\"><title>{}: {} at {}</title></rect>",
                                   px(s.x[i]) - bar_width / 2, py(s.y[i]), bar_width, plot_bottom - py(s.y[i]), color,
                                   name, escape(short_number(s.y[i])), escape(short_number(s.x[i])));
                }
                break;
            case XySeries::Style::line:
                fmt::format_to(out, "<polyline class=\"line\" stroke=\"{}\" points=\"", color);
                for (std::size_t i = 0; i < s.x.size(); ++i) {
                    if (finite_point(s, i, chart.log_y)) fmt::format_to(out, "{:.1f},{:.1f} ", px(s.x[i]), py(s.y[i]));
                }
                fmt::format_to(out, "\"><title>{}</title></polyline>", name);
                break;
            case XySeries::Style::points:
                for (std::size_t i = 0; i < s.x.size(); ++i) {
                    if (!finite_point(s, i, chart.log_y)) continue;
                    fmt::format_to(out,
                                   "<circle class=\"point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\">"
                                   "<title>{}: {} at {}</title></circle>",
                                   px(s.x[i]), py(s.y[i]), color, name, escape(short_number(s.y[i])),
                                   escape(short_number(s.x[i])));
                }
                break;
        }
    }
    svg += "</svg>";
    return svg;
}

}  // namespace flowsketch::reports::html
