#include "src/lab/lab_html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <optional>

#include "reports/html/svg_chart.hpp"
#include "reports/html/xy_chart.hpp"

namespace flowsketch::app::lab {
namespace {

using reports::html::escape;
using reports::html::XyChart;
using reports::html::XySeries;

constexpr const char* style = R"css(
body{font:14px/1.4 system-ui,sans-serif;margin:16px 24px;color:#222;max-width:900px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 6px;border-bottom:1px solid #ccc}
p.note{color:#555;margin:2px 0 8px}pre.note{color:#555;font-size:12px;white-space:pre-wrap;margin:2px 0 10px}
table{border-collapse:collapse;margin:4px 0 6px;font-size:12px}td,th{padding:2px 6px;text-align:right;border-bottom:1px solid #eee}
caption{text-align:left;font-weight:bold;padding:4px 0}tr.outside td{color:#a40}
svg.chart{display:block;margin:6px 0;font:11px sans-serif}
svg .title{font:bold 13px sans-serif}svg .tick{fill:#555}svg .legend{fill:#333}svg .empty{fill:#888}
svg .grid{stroke:#e4e4e4}svg .axis{stroke:#888}svg .line{fill:none;stroke-width:1.6}
)css";

constexpr const char* blue = "#4e79a7";
constexpr const char* orange = "#f28e2b";
constexpr const char* red = "#e15759";
constexpr const char* green = "#59a14f";
constexpr const char* purple = "#b07aa1";

std::optional<double> number(const Row& row, const std::string& name) {
    for (const Field& field : row.fields()) {
        if (field.name != name) continue;
        if (const auto* i = std::get_if<std::int64_t>(&field.value)) return static_cast<double>(*i);
        if (const auto* d = std::get_if<double>(&field.value)) return *d;
    }
    return std::nullopt;
}

std::string text(const Row& row, const std::string& name) {
    for (const Field& field : row.fields()) {
        if (field.name == name) {
            if (const auto* s = std::get_if<std::string>(&field.value)) return *s;
        }
    }
    return {};
}

double value_or_nan(const Row& row, const std::string& name) {
    return number(row, name).value_or(std::numeric_limits<double>::quiet_NaN());
}

// Rows of one experiment, in table order.
std::vector<const Row*> rows_of(const std::vector<Table>& tables, const std::string& experiment) {
    std::vector<const Row*> rows;
    for (const Table& table : tables) {
        for (const Row& row : table.rows) {
            if (text(row, "experiment") == experiment) rows.push_back(&row);
        }
    }
    return rows;
}

// "partitioned" stays as it is; anything outside [a-z0-9-] becomes '-': ids are stable and plain.
std::string id_part(const std::string& name) {
    std::string id;
    for (const char c : name) id.push_back((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ? c : '-');
    return id;
}

// Kirsch–Mitzenmacher Fig. 2: per scheme, trials by Q beside the normal
// density the paper draws and the binomial it approximates.
void fig2_charts(const std::vector<Table>& tables, std::vector<std::string>& figures) {
    std::map<std::string, std::vector<const Row*>> by_scheme;
    std::vector<std::string> order;
    for (const Row* row : rows_of(tables, "bloom-fig2")) {
        const std::string scheme = text(*row, "scheme");
        if (by_scheme.find(scheme) == by_scheme.end()) order.push_back(scheme);
        by_scheme[scheme].push_back(row);
    }
    for (const std::string& scheme : order) {
        XyChart chart;
        chart.id = "fig2-" + id_part(scheme);
        chart.title = "Fig. 2 (" + scheme + "): trials by Q, the false positives among 10/p queries";
        chart.x_label = "Q";
        chart.y_label = "trials";
        XySeries observed{"observed", blue, XySeries::Style::bars, {}, {}};
        XySeries normal{"normal (paper)", red, XySeries::Style::line, {}, {}};
        XySeries binomial{"binomial", green, XySeries::Style::line, {}, {}};
        for (const Row* row : by_scheme[scheme]) {
            const double x = value_or_nan(*row, "x");
            for (XySeries* s : {&observed, &normal, &binomial}) s->x.push_back(x);
            observed.y.push_back(value_or_nan(*row, "observed"));
            normal.y.push_back(value_or_nan(*row, "expected"));
            binomial.y.push_back(value_or_nan(*row, "binomial"));
        }
        chart.series = {observed, normal, binomial};
        figures.push_back(render_xy_chart(chart));
    }
}

// Lumetta–Mitzenmacher Table 3: each row's measured false-positive rate
// against the paper's, by number of choices; on the diagonal when they agree.
void table3_chart(const std::vector<Table>& tables, std::vector<std::string>& figures) {
    const std::vector<const Row*> rows = rows_of(tables, "two-choice-table3");
    if (rows.empty()) return;
    XyChart chart;
    chart.id = "table3";
    chart.title = "Lumetta–Mitzenmacher Table 3: false-positive rate measured against the paper's";
    chart.x_label = "the paper's false-positive rate";
    chart.y_label = "measured";
    chart.log_y = false;
    const char* colors[] = {purple, blue, orange};
    std::map<int, XySeries> by_choices;
    double low = std::numeric_limits<double>::infinity(), high = 0;
    for (const Row* row : rows) {
        const int c = static_cast<int>(value_or_nan(*row, "c"));
        auto [it, added] = by_choices.try_emplace(c);
        if (added) {
            it->second = XySeries{fmt::format("c = {}", c), colors[std::clamp(c - 1, 0, 2)], XySeries::Style::points, {}, {}};
        }
        const double paper = value_or_nan(*row, "expected");
        it->second.x.push_back(paper);
        it->second.y.push_back(value_or_nan(*row, "observed"));
        if (std::isfinite(paper)) {
            low = std::min(low, paper);
            high = std::max(high, paper);
        }
    }
    chart.series.push_back(XySeries{"equal", "#999", XySeries::Style::line, {low, high}, {low, high}});
    for (auto& [c, series] : by_choices) chart.series.push_back(series);
    figures.push_back(render_xy_chart(chart));
}

// Count-Min: the share of keys whose error exceeds ε·N, by memory, against
// the failure bound of each scheme's width and depth (log scale: the bound
// is far above what is measured).
void count_min_chart(const std::vector<Table>& tables, std::vector<std::string>& figures) {
    const std::vector<const Row*> rows = rows_of(tables, "cms");
    if (rows.empty()) return;
    XyChart chart;
    chart.id = "cms-error";
    chart.title = "Count-Min: share of keys with error > εN, and the bound, by cells";
    chart.x_label = "cells (width × depth)";
    chart.y_label = "share of keys";
    chart.log_y = true;
    const char* colors[] = {blue, orange, green, purple};
    std::map<std::string, std::pair<XySeries, XySeries>> by_scheme;
    std::vector<std::string> order;
    for (const Row* row : rows) {
        const std::string scheme = text(*row, "scheme");
        auto [it, added] = by_scheme.try_emplace(scheme);
        if (added) {
            const char* color = colors[order.size() % 4];
            order.push_back(scheme);
            it->second = {XySeries{scheme + " measured", color, XySeries::Style::points, {}, {}},
                          XySeries{scheme + " bound", color, XySeries::Style::line, {}, {}}};
        }
        const double cells = value_or_nan(*row, "m");
        it->second.first.x.push_back(cells);
        it->second.first.y.push_back(value_or_nan(*row, "observed"));
        it->second.second.x.push_back(cells);
        it->second.second.y.push_back(value_or_nan(*row, "expected"));
    }
    for (const std::string& scheme : order) {
        chart.series.push_back(by_scheme[scheme].first);
        chart.series.push_back(by_scheme[scheme].second);
    }
    figures.push_back(render_xy_chart(chart));
}

std::string cell(const Value& value) {
    if (const auto* i = std::get_if<std::int64_t>(&value)) return fmt::format("{}", *i);
    if (const auto* d = std::get_if<double>(&value)) return std::isfinite(*d) ? fmt::format("{:.6g}", *d) : "—";
    if (const auto* b = std::get_if<bool>(&value)) return *b ? "yes" : "no";
    return std::get<std::string>(value);
}

void append_table(std::string& html, const Table& table) {
    auto out = std::back_inserter(html);
    fmt::format_to(out, "<table><caption>{}</caption>", escape(table.title));
    if (!table.rows.empty()) {
        html += "<tr>";
        for (const Field& field : table.rows.front().fields()) fmt::format_to(out, "<th>{}</th>", escape(field.name));
        html += "</tr>";
    }
    for (const Row& row : table.rows) {
        html += row.within() ? "<tr>" : "<tr class=\"outside\">";
        for (const Field& field : row.fields()) fmt::format_to(out, "<td>{}</td>", escape(cell(field.value)));
        html += "</tr>";
    }
    html += "</table>";
    if (!table.note.empty()) fmt::format_to(out, "<pre class=\"note\">{}</pre>", escape(table.note));
}

}  // namespace

std::string lab_page(const std::vector<Table>& tables, const std::string& command) {
    std::vector<std::string> figures;
    fig2_charts(tables, figures);
    table3_chart(tables, figures);
    count_min_chart(tables, figures);
    std::size_t outside = 0;
    for (const Table& table : tables) {
        outside += static_cast<std::size_t>(
            std::count_if(table.rows.begin(), table.rows.end(), [](const Row& row) { return !row.within(); }));
    }
    std::string html;
    auto out = std::back_inserter(html);
    html += "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">";
    fmt::format_to(out, "<title>flowsketch lab</title><style>{}</style></head><body>", style);
    fmt::format_to(out, "<h1>flowsketch lab</h1><p class=\"note\" id=\"command\">{}</p>", escape(command));
    fmt::format_to(out, "<p class=\"note\" id=\"verdict\">{}</p>",
                   outside == 0 ? std::string("Every row is within tolerance.")
                                : fmt::format("{} row(s) outside tolerance (in orange below).", outside));
    if (!figures.empty()) {
        html += "<h2>Figures</h2>";
        for (const std::string& figure : figures) html += figure;
    }
    html += "<h2>Tables</h2>";
    for (const Table& table : tables) append_table(html, table);
    html += "</body></html>\n";
    return html;
}

}  // namespace flowsketch::app::lab
