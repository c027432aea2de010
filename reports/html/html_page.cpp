#include "reports/html/html_page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <iterator>

#include "reports/html/svg_chart.hpp"
#include "reports/key_format.hpp"
#include "reports/number_format.hpp"

namespace flowsketch::reports::html {
namespace {

constexpr const char* style = R"css(
body{font:14px/1.4 system-ui,sans-serif;margin:16px 24px;color:#222;max-width:900px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 6px;border-bottom:1px solid #ccc}
h3{font-size:14px;margin:14px 0 4px}p.note{color:#555;margin:2px 0 8px}
table{border-collapse:collapse;margin:4px 0 10px}td,th{padding:2px 8px;text-align:right;border-bottom:1px solid #eee}
td.key,th.key{text-align:left;font-family:monospace}
svg.chart{display:block;margin:6px 0;font:11px sans-serif}
svg .title{font:bold 13px sans-serif}svg .tick{fill:#555}svg .legend{fill:#333}svg .empty{fill:#888}
svg .grid{stroke:#e4e4e4}svg .axis{stroke:#888}svg .line{fill:none;stroke-width:1.6}
svg .band{opacity:.18;stroke:none}svg line.whisker{stroke-width:1.2}
svg .bar rect{fill:#4e79a7}svg .bar.flagged rect{fill:#e15759}svg .bar line.whisker{stroke:#111}
svg .label{font:11px monospace}
.warn{color:#a40}
)css";

// Counts and estimates alike, as the text report writes them.
std::string grouped(std::uint64_t value) { return with_separators(value); }
std::string grouped(double value) { return rounded(value); }

std::string utc(double unix_seconds) {
    const auto whole = static_cast<std::time_t>(std::floor(unix_seconds));
    std::tm tm{};
    gmtime_r(&whole, &tm);
    char buffer[32];
    std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M:%S UTC", &tm);
    return buffer;
}

// A key as one line: "tcp 10.0.0.1:80 → 10.0.0.2:443" for the 5-tuple, the
// spec's fields ("src 10.0.0.0/24") otherwise.
std::string key_label(const core::FlowKey& key, const core::KeySpec& spec) {
    if (spec == core::KeySpec::five_tuple()) {
        return protocol_name(key.protocol) + " " + endpoint(key, true) + " → " + endpoint(key, false);
    }
    std::string label;
    for (const KeyFieldText& field : key_fields(key, spec)) {
        if (!label.empty()) label += ' ';
        label += std::string(field.name) + " " + (field.name == "proto" ? protocol_name(key.protocol) : field.text);
    }
    return label;
}

const char* unit_of(core::Weight weight) { return weight == core::Weight::bytes ? "bytes" : "packets"; }

void row(std::string& html, std::string_view name, const std::string& value) {
    html += "<tr><th class=\"key\">" + escape(name) + "</th><td>" + escape(value) + "</td></tr>";
}

// A top list: its bar chart, then its table.
void append_top(std::string& html, const std::string& id, const std::string& title, const core::TopList& list,
                double epsilon, const std::vector<core::DistinctBounds>* distinct) {
    BarChart chart;
    chart.id = id;
    chart.title = title;
    chart.unit = unit_of(list.weight);
    for (const core::HeavyHitter& hitter : list) {
        chart.bars.push_back({key_label(hitter.key, list.spec), static_cast<double>(hitter.estimate),
                              static_cast<double>(hitter.lower), hitter.shares_cells});
    }
    html += render_bar_chart(chart);
    auto out = std::back_inserter(html);
    fmt::format_to(out, "<p class=\"note\">N = {} {}; each estimate is at most ε·N = {} above the truth, and the truth "
                        "is at least the lower bound (whisker), each with probability ≥ 1 − δ.</p>",
                   grouped(list.total), chart.unit, grouped(epsilon * static_cast<double>(list.total)));
    if (list.empty()) return;
    fmt::format_to(out, "<table id=\"{}-table\"><tr><th>#</th><th class=\"key\">key</th><th>{}</th><th>lower bound</th>"
                        "<th>share</th>{}</tr>",
                   escape(id), chart.unit, distinct != nullptr ? "<th>distinct</th><th>bounds</th>" : "");
    for (std::size_t r = 0; r < list.size(); ++r) {
        const core::HeavyHitter& hitter = list[r];
        const double share = list.total == 0 ? 0.0
                                             : 100.0 * static_cast<double>(hitter.estimate) /
                                                   static_cast<double>(list.total);
        fmt::format_to(out, "<tr{}><td>{}</td><td class=\"key\">{}</td><td>{}</td><td>{}</td><td>{:.1f}%</td>",
                       hitter.shares_cells ? " class=\"warn\" title=\"shares every sketch cell with another key\"" : "",
                       r + 1, escape(key_label(hitter.key, list.spec)), grouped(hitter.estimate),
                       grouped(hitter.lower), share);
        if (distinct != nullptr && r < distinct->size()) {
            const core::DistinctBounds& d = (*distinct)[r];
            fmt::format_to(out, "<td>{}</td><td>[{}, {}]</td>", grouped(d.estimate), grouped(std::floor(d.lower)),
                           grouped(std::ceil(d.upper)));
        }
        html += "</tr>";
    }
    html += "</table>";
}

void append_changes(std::string& html, const std::string& id, const std::string& title, const core::ChangeList& list) {
    auto out = std::back_inserter(html);
    fmt::format_to(out, "<h3>{}</h3>", escape(title));
    if (!list.has_previous) {
        html += "<p class=\"note\">The run's first interval: nothing to compare with.</p>";
        return;
    }
    fmt::format_to(out, "<p class=\"note\">Each change is within ±{} of the true change (probability ≥ 1 − 2δ).</p>",
                   grouped(std::ceil(list.bound)));
    if (list.empty()) {
        html += "<p class=\"note\">none</p>";
        return;
    }
    fmt::format_to(out, "<table id=\"{}\"><tr><th class=\"key\">key</th><th>previous</th><th>current</th>"
                        "<th>change</th></tr>",
                   escape(id));
    for (const core::KeyChange& change : list) {
        fmt::format_to(out, "<tr><td class=\"key\">{}</td><td>{}</td><td>{}</td><td>{:+}</td></tr>",
                       escape(key_label(change.key, list.spec)), grouped(change.previous), grouped(change.current),
                       change.change);
    }
    html += "</table>";
}

void append_series(std::string& html, const IntervalHistory& history, const Report& latest) {
    const auto& points = history.points();
    LineChart traffic{"plot-packets", "IP packets per interval", {}, {{"packets", "#4e79a7", {}, {}, {}}}};
    LineChart bytes{"plot-bytes", "Bytes per interval", {}, {{"bytes", "#f28e2b", {}, {}, {}}}};
    LineChart lost{"plot-skipped", "Frames not counted per interval", {},
                   {{"skipped (not keyed)", "#b07aa1", {}, {}, {}}, {"dropped before capture", "#e15759", {}, {}, {}}}};
    LineChart fresh{"plot-flows-new", "New flows per interval (band: up to new + undercount bound)", {},
                    {{"new", "#59a14f", {}, {}, {}}}};
    LineChart active{"plot-flows-active", "Active flows at each interval's end (band: lower..upper)", {},
                     {{"active", "#4e79a7", {}, {}, {}}}};
    LineChart expired{"plot-flows-expired", "Expired flows per interval (band: ± 3 standard errors)", {},
                      {{"expired", "#e15759", {}, {}, {}}}};
    // No interval report (--interval 0): the final report is the one point.
    std::vector<IntervalPoint> single;
    const std::vector<IntervalPoint>* shown = &points;
    if (points.empty()) {
        single.push_back(point_of(latest));
        shown = &single;
    }
    for (const IntervalPoint& p : *shown) {
        // A merged point shows the mean per interval of the span it covers.
        const double n = static_cast<double>(p.intervals);
        const double t = p.end;
        for (LineChart* chart : {&traffic, &bytes, &lost, &fresh, &active, &expired}) chart->x.push_back(t);
        traffic.series[0].values.push_back(p.packets / n);
        bytes.series[0].values.push_back(p.bytes / n);
        lost.series[0].values.push_back(p.skipped / n);
        lost.series[1].values.push_back(p.dropped / n);
        Series& s_new = fresh.series[0];
        s_new.values.push_back(p.new_flows / n);
        s_new.lower.push_back(p.new_flows / n);
        s_new.upper.push_back((p.new_flows + p.new_undercount_bound) / n);
        Series& s_active = active.series[0];
        s_active.values.push_back(p.active);
        s_active.lower.push_back(p.active_lower);
        s_active.upper.push_back(p.active_upper);
        Series& s_expired = expired.series[0];
        const double spread = 3 * std::sqrt(p.expired_variance);
        s_expired.values.push_back(p.expired / n);
        s_expired.lower.push_back(std::max(0.0, p.expired - spread) / n);
        s_expired.upper.push_back((p.expired + spread) / n);
    }
    html += "<h2 id=\"series\">Over time</h2>";
    auto out = std::back_inserter(html);
    if (points.empty()) {
        html += "<p class=\"note\">No interval reports: the one point is the whole run.</p>";
    } else {
        fmt::format_to(out, "<p class=\"note\">{} interval reports; x is each interval's end.", grouped(history.intervals_seen()));
        if (history.resolution() > 1) {
            fmt::format_to(out, " To keep a fixed size (at most {} points) neighbouring intervals were merged: each "
                                "point covers {} intervals and shows their mean per interval (active: as of its end).",
                           grouped(static_cast<std::uint64_t>(history.capacity())), grouped(history.resolution()));
        }
        html += "</p>";
    }
    html += render_line_chart(traffic) + render_line_chart(bytes);
    if (latest.has_flows) html += render_line_chart(fresh) + render_line_chart(active) + render_line_chart(expired);
    html += render_line_chart(lost);
}

void append_health(std::string& html, const Report& latest) {
    auto out = std::back_inserter(html);
    html += "<h2 id=\"health\">Drops, skipped frames and warnings</h2>";
    if (latest.counts_are_lower_bounds) {
        html += "<p class=\"warn\">Frames were dropped before flowsketch saw them: every count is a lower bound.</p>";
    }
    if (latest.truncated) html += "<p class=\"warn\">An input ended early or was damaged.</p>";
    html += "<ul id=\"warnings\">";
    for (const std::string& warning : latest.warnings) fmt::format_to(out, "<li class=\"warn\">{}</li>", escape(warning));
    html += latest.warnings.empty() ? "<li>no warnings</li></ul>" : "</ul>";
    html += "<table id=\"skipped\"><tr><th class=\"key\">frames not keyed, by reason</th><th>frames</th></tr>";
    bool any = false;
    for (const SkipCount& skip : latest.skipped) {
        if (skip.count == 0) continue;
        any = true;
        fmt::format_to(out, "<tr><td class=\"key\">{}</td><td>{}</td></tr>", escape(skip.name), grouped(skip.count));
    }
    if (!any) html += "<tr><td class=\"key\">none</td><td>0</td></tr>";
    html += "</table>";
    if (!latest.interfaces.empty()) {
        html += "<table id=\"interfaces\"><tr><th class=\"key\">interface</th><th>frames</th><th>received</th>"
                "<th>dropped</th><th>dropped by interface</th></tr>";
        for (const InterfaceReport& i : latest.interfaces) {
            fmt::format_to(out, "<tr><td class=\"key\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                           escape(i.name), grouped(i.frames), grouped(i.received), grouped(i.dropped),
                           grouped(i.if_dropped));
        }
        html += "</table>";
    }
}

void append_parameters(std::string& html, const RunDescription& run, const Report& latest) {
    const SketchDescription& s = latest.sketch;
    html += "<h2 id=\"parameters\">Parameters</h2><table id=\"parameters-table\">";
    for (const std::string& input : run.inputs) row(html, "input", input);
    if (!run.filter.empty()) row(html, "filter", run.filter);
    // Which probe(s) measured, and the seed their sketches share (merge needs it equal).
    if (!latest.probe.empty()) row(html, latest.probe.find(',') == std::string::npos ? "probe" : "probes", latest.probe);
    row(html, "hash seed", fmt::format("{:#018x}", latest.seed));
    row(html, "Count-Min", fmt::format("{}{}, width {} × depth {}", s.variant, s.conservative_update ? ", conservative" : "",
                                       s.width, s.depth));
    row(html, "ε (additive error per N)", fmt::format("{:g}", s.epsilon));
    row(html, "δ (probability a bound fails)", fmt::format("{:g}", s.delta));
    row(html, "measurement state", fmt::format("{} KiB", grouped(s.memory_bytes / 1024)));
    row(html, "heavy hitters listed", grouped(static_cast<std::uint64_t>(latest.top_packets.size())));
    std::string specs = "5tuple";
    for (const core::KeyTops& key : latest.keys) specs += ", " + key.top_packets.spec.name();
    row(html, "key specs", specs);
    if (latest.has_flows) {
        const FlowSection& f = latest.flows;
        row(html, "seen filter", fmt::format("{} for {} active flows, {} KiB, target false-positive rate {:g}",
                                             f.seen_filter, grouped(f.max_flows), grouped(f.memory_bytes / 1024),
                                             f.counts.target_fpr));
        row(html, "idle timeout", fmt::format("{:g} s, {} generations (expiry within {:g} s after it)", f.idle_timeout,
                                              f.generations, f.idle_timeout / std::max<std::uint32_t>(f.generations, 1)));
    } else {
        row(html, "flow lifecycle", "off (--no-flows)");
    }
    html += "</table>";
}

}  // namespace

std::string render_page(const RunDescription& run, const IntervalHistory& history, const Report& latest,
                        const Report* last_interval) {
    std::string html;
    html.reserve(64 * 1024 + history.points().size() * 400);
    auto out = std::back_inserter(html);
    const bool final_report = latest.kind == ReportKind::final_report;
    html += "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "script-src 'unsafe-inline'\">";
    if (!final_report) {
        // The run goes on and rewrites this file each interval: reload with it.
        const double every = std::clamp(std::ceil(latest.end - latest.start), 5.0, 3600.0);
        fmt::format_to(out, "<meta http-equiv=\"refresh\" content=\"{:.0f}\">", every);
    }
    fmt::format_to(out, "<title>flowsketch: {}</title><style>{}</style></head><body>",
                   escape(run.inputs.empty() ? std::string("report") : run.inputs.front()), style);
    fmt::format_to(out, "<h1>flowsketch {}</h1><p class=\"note\" id=\"status\">{} to {}. {}</p>",
                   final_report ? "final report" : "report (run in progress)", utc(latest.start), utc(latest.end),
                   final_report ? "The run has ended."
                                : "Rewritten at each interval; this page reloads itself.");
    html += "<table id=\"totals\">";
    row(html, "frames read", grouped(latest.frames));
    row(html, "IP packets keyed", grouped(latest.packets));
    row(html, "bytes", grouped(latest.bytes));
    if (latest.has_distinct_totals) {
        const core::DistinctTotals& d = latest.distinct_totals;
        for (const auto& [name, bounds] : {std::pair{"distinct flows", &d.flows}, std::pair{"distinct sources", &d.sources},
                                           std::pair{"distinct destinations", &d.destinations}}) {
            row(html, name, fmt::format("{} [{}, {}]", grouped(bounds->estimate), grouped(std::floor(bounds->lower)),
                                        grouped(std::ceil(bounds->upper))));
        }
    }
    html += "</table>";

    append_series(html, history, latest);

    fmt::format_to(out, "<h2 id=\"top\">Heavy hitters of the {}</h2>", final_report ? "whole run" : "latest interval");
    const double epsilon = latest.sketch.epsilon;
    append_top(html, "plot-top-packets", "Top flows by packets", latest.top_packets, epsilon, nullptr);
    append_top(html, "plot-top-bytes", "Top flows by bytes", latest.top_bytes, epsilon, nullptr);
    for (std::size_t k = 0; k < latest.keys.size(); ++k) {
        const core::KeyTops& key = latest.keys[k];
        const std::string name = key.top_packets.spec.name();
        fmt::format_to(out, "<h3>{}</h3>", escape(name));
        append_top(html, fmt::format("plot-key-{}-packets", k + 1), "Top " + name + " by packets", key.top_packets,
                   epsilon, key.has_distinct ? &key.distinct_packets : nullptr);
        append_top(html, fmt::format("plot-key-{}-bytes", k + 1), "Top " + name + " by bytes", key.top_bytes, epsilon,
                   key.has_distinct ? &key.distinct_bytes : nullptr);
        if (key.has_distinct) {
            fmt::format_to(out, "<h3>Top {} by distinct count</h3>", escape(name));
            append_top(html, fmt::format("plot-key-{}-distinct", k + 1), "Packets of the keys with the most distinct items",
                       key.top_distinct.list, epsilon, &key.top_distinct.distinct);
        }
    }

    if (last_interval != nullptr) {
        fmt::format_to(out, "<h2 id=\"changes\">What changed in the interval ending {}</h2>", utc(last_interval->end));
        append_changes(html, "changes-packets", "5-tuples by packets", last_interval->changes_packets);
        append_changes(html, "changes-bytes", "5-tuples by bytes", last_interval->changes_bytes);
        for (std::size_t k = 0; k < last_interval->keys.size(); ++k) {
            const core::KeyTops& key = last_interval->keys[k];
            const std::string name = key.top_packets.spec.name();
            append_changes(html, fmt::format("changes-key-{}-packets", k + 1), name + " by packets", key.changes_packets);
            append_changes(html, fmt::format("changes-key-{}-bytes", k + 1), name + " by bytes", key.changes_bytes);
        }
    }

    append_health(html, latest);
    append_parameters(html, run, latest);
    // Marks a page whose markup the browser parsed to the end: tests read it.
    html += "<script>document.documentElement.setAttribute('data-rendered',"
            "String(document.querySelectorAll('svg.chart').length));</script></body></html>\n";
    return html;
}

}  // namespace flowsketch::reports::html
