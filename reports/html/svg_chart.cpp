#include "reports/html/svg_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <ctime>
#include <iterator>

namespace flowsketch::reports::html {
namespace {

constexpr double line_width = 860, line_height = 230;
constexpr double left = 64, right = 16, top = 30, bottom = 34;
constexpr std::size_t marked_points = 80;  // above it, points are not marked

// The smallest 1, 2 or 5 × 10^k at or above `value`: the axis' end.
double nice_ceiling(double value) {
    if (!(value > 0) || !std::isfinite(value)) return 1;
    const double magnitude = std::pow(10.0, std::floor(std::log10(value)));
    for (const double step : {1.0, 2.0, 5.0, 10.0}) {
        if (step * magnitude >= value * (1 - 1e-12)) return step * magnitude;
    }
    return 10 * magnitude;
}

std::string utc_clock(double unix_seconds, bool with_date) {
    const auto whole = static_cast<std::time_t>(std::floor(unix_seconds));
    std::tm tm{};
    gmtime_r(&whole, &tm);
    std::array<char, 32> buffer{};
    std::strftime(buffer.data(), buffer.size(), with_date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm);
    return buffer.data();
}

// Cut to `max` characters (code points: a label may hold "→"), "…" marking the cut.
std::string clip(const std::string& text, std::size_t max) {
    std::size_t points = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
        if (points++ == max - 1) return text.substr(0, i) + "…";
    }
    return text;
}

void append_y_axis(std::string& svg, double y_max, double plot_right, double plot_bottom) {
    auto out = std::back_inserter(svg);
    const double plot_h = plot_bottom - top;
    for (int tick = 0; tick <= 4; ++tick) {
        const double y = plot_bottom - plot_h * tick / 4.0;
        fmt::format_to(out,
                       "<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>"
                       "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>",
                       left, y, plot_right, y, left - 6, y + 4, escape(short_number(y_max * tick / 4.0)));
    }
}

}  // namespace

std::string escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default: out.push_back(c);
        }
    }
    return out;
}

std::string short_number(double value) {
    if (!std::isfinite(value)) return value > 0 ? "∞" : "—";
    constexpr std::array<const char*, 5> suffixes = {"", "k", "M", "G", "T"};
    std::size_t unit = 0;
    double scaled = value;
    while (std::fabs(scaled) >= 999.5 && unit + 1 < suffixes.size()) {
        scaled /= 1000;
        ++unit;
    }
    const double magnitude = std::fabs(scaled);
    const int decimals = unit == 0 && magnitude == std::floor(magnitude) ? 0
                         : magnitude < 9.995                             ? 2
                         : magnitude < 99.95                             ? 1
                                                                         : 0;
    std::string text = fmt::format("{:.{}f}", scaled, decimals);
    if (text.find('.') != std::string::npos) {  // 1.50k reads as 1.5k
        while (text.back() == '0') text.pop_back();
        if (text.back() == '.') text.pop_back();
    }
    return text + suffixes[unit];
}

std::string render_line_chart(const LineChart& chart) {
    std::string svg;
    auto out = std::back_inserter(svg);
    const double plot_right = line_width - right, plot_bottom = line_height - bottom;
    fmt::format_to(out,
                   "<svg id=\"{}\" class=\"chart\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\">"
                   "<text class=\"title\" x=\"{}\" y=\"18\">{}</text>",
                   escape(chart.id), line_width, line_height, line_width, line_height, left, escape(chart.title));
    // The legend, right-aligned on the title's line.
    double legend_x = plot_right;
    for (auto s = chart.series.rbegin(); s != chart.series.rend(); ++s) {
        const double width = 7.0 * static_cast<double>(s->name.size()) + 22;
        legend_x -= width;
        fmt::format_to(out,
                       "<rect x=\"{:.1f}\" y=\"9\" width=\"10\" height=\"10\" fill=\"{}\"/>"
                       "<text class=\"legend\" x=\"{:.1f}\" y=\"18\">{}</text>",
                       legend_x, escape(s->color), legend_x + 14, escape(s->name));
    }
    double y_max = 0;
    for (const Series& s : chart.series) {
        for (const double v : s.values) y_max = std::max(y_max, v);
        for (const double v : s.upper) y_max = std::max(y_max, std::isfinite(v) ? v : 0.0);
    }
    y_max = nice_ceiling(y_max);
    append_y_axis(svg, y_max, plot_right, plot_bottom);
    const std::size_t n = chart.x.size();
    if (n == 0) {
        fmt::format_to(out, "<text class=\"empty\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">no data yet</text></svg>",
                       (left + plot_right) / 2, (top + plot_bottom) / 2);
        return svg;
    }
    const double x0 = chart.x.front(), span = chart.x.back() - chart.x.front();
    auto px = [&](std::size_t i) {
        return span > 0 ? left + (plot_right - left) * (chart.x[i] - x0) / span : (left + plot_right) / 2;
    };
    auto py = [&](double v) {
        const double clamped = std::clamp(std::isfinite(v) ? v : y_max, 0.0, y_max);
        return plot_bottom - (plot_bottom - top) * clamped / y_max;
    };
    // Time on x: five ticks (one when all points share a time).
    const int ticks = span > 0 ? 4 : 0;
    for (int tick = 0; tick <= ticks; ++tick) {
        const double t = x0 + (ticks == 0 ? 0 : span * tick / ticks);
        const double x = span > 0 ? left + (plot_right - left) * tick / ticks : (left + plot_right) / 2;
        const char* anchor = ticks == 0 ? "middle" : tick == 0 ? "start" : tick == ticks ? "end" : "middle";
        fmt::format_to(out, "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\">{}</text>", x,
                       plot_bottom + 16, anchor, utc_clock(t, tick == 0));
    }
    fmt::format_to(out, "<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>", left, plot_bottom,
                   plot_right);
    for (const Series& s : chart.series) {
        const std::string color = escape(s.color);
        const bool band = s.lower.size() == n && s.upper.size() == n;
        if (band && n > 1) {
            svg += "<polygon class=\"band\" fill=\"" + color + "\" points=\"";
            for (std::size_t i = 0; i < n; ++i) fmt::format_to(out, "{:.1f},{:.1f} ", px(i), py(s.upper[i]));
            for (std::size_t i = n; i-- > 0;) fmt::format_to(out, "{:.1f},{:.1f} ", px(i), py(s.lower[i]));
            svg += "\"/>";
        }
        if (band && n <= marked_points) {  // whiskers: the bound of each point
            for (std::size_t i = 0; i < n; ++i) {
                fmt::format_to(out,
                               "<line class=\"whisker\" stroke=\"{}\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" "
                               "y2=\"{:.1f}\"/>",
                               color, px(i), py(s.lower[i]), px(i), py(s.upper[i]));
            }
        }
        if (s.values.size() != n) continue;
        fmt::format_to(out, "<polyline class=\"line\" stroke=\"{}\" points=\"", color);
        for (std::size_t i = 0; i < n; ++i) fmt::format_to(out, "{:.1f},{:.1f} ", px(i), py(s.values[i]));
        fmt::format_to(out, "\"><title>{}</title></polyline>", escape(s.name));
        if (n <= marked_points) {
            for (std::size_t i = 0; i < n; ++i) {
                fmt::format_to(out, "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"/>", px(i),
                               py(s.values[i]), color);
            }
        }
    }
    svg += "</svg>";
    return svg;
}

std::string render_bar_chart(const BarChart& chart) {
    constexpr double width = 860, label_width = 330, row = 22, value_room = 64;
    constexpr std::size_t label_chars = 52;
    const double height = top + row * static_cast<double>(std::max<std::size_t>(chart.bars.size(), 1)) + 26;
    std::string svg;
    auto out = std::back_inserter(svg);
    fmt::format_to(out,
                   "<svg id=\"{}\" class=\"chart bars\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\">"
                   "<text class=\"title\" x=\"8\" y=\"18\">{}</text>",
                   escape(chart.id), width, height, width, height, escape(chart.title));
    if (chart.bars.empty()) {
        fmt::format_to(out, "<text class=\"empty\" x=\"{}\" y=\"{}\">none</text></svg>", label_width, top + 14);
        return svg;
    }
    double x_max = 0;
    for (const Bar& bar : chart.bars) x_max = std::max(x_max, bar.estimate);
    x_max = nice_ceiling(x_max);
    const double plot_left = label_width, plot_right = width - value_room;
    auto px = [&](double v) { return plot_left + (plot_right - plot_left) * std::clamp(v, 0.0, x_max) / x_max; };
    const double plot_bottom = top + row * static_cast<double>(chart.bars.size());
    for (int tick = 0; tick <= 4; ++tick) {
        const double x = plot_left + (plot_right - plot_left) * tick / 4.0;
        fmt::format_to(out,
                       "<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>"
                       "<text class=\"tick\" x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>",
                       x, top, plot_bottom, plot_bottom + 16, escape(short_number(x_max * tick / 4.0)));
    }
    double y = top;
    for (const Bar& bar : chart.bars) {
        const double mid = y + row / 2;
        fmt::format_to(out,
                       "<g class=\"bar{}\"><title>{}: {} {} (lower bound {}){}</title>"
                       "<text class=\"label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>"
                       "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/>"
                       "<line class=\"whisker\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>"
                       "<line class=\"whisker\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>"
                       "<line class=\"whisker\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>"
                       "<text class=\"value\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text></g>",
                       bar.flagged ? " flagged" : "", escape(bar.label), short_number(bar.estimate),
                       escape(chart.unit), short_number(bar.lower),
                       bar.flagged ? "; shares every sketch cell with another candidate: the lower bound is what it sent since it became one" : "",
                       plot_left - 6, mid + 4, escape(clip(bar.label, label_chars)),
                       plot_left, y + 3, px(bar.estimate) - plot_left, row - 6,
                       px(bar.lower), mid, px(bar.estimate), mid,
                       px(bar.lower), mid - 5, px(bar.lower), mid + 5,
                       px(bar.estimate), mid - 5, px(bar.estimate), mid + 5,
                       px(bar.estimate) + 6, mid + 4, escape(short_number(bar.estimate)));
        y += row;
    }
    svg += "</svg>";
    return svg;
}

}  // namespace flowsketch::reports::html
