// CSV rendering: one row per heavy hitter per report, for spreadsheets and
// tools that want flat rows. Columns are a contract (docs/report-csv.md):
// new columns are added at the end, never renamed, dropped or reordered.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <iterator>

#include "reports/format_registry.hpp"
#include "reports/formats/csv.hpp"
#include "reports/formats/verify_section.hpp"
#include "reports/key_format.hpp"

namespace flowsketch::reports {

std::string csv_header() {
    return "kind,start,end,ranking,rank,proto,src,dst,sport,dport,estimate,lower,"
           "window_packets,window_bytes,epsilon,delta,shares_cells,key,distinct,distinct_lower,distinct_upper,probe,"
           "seed,metric,value,vlan,vni,tunnel\n";
}

namespace {

// RFC 4180: a value with a comma is quoted (a key spec such as dst/24,64).
std::string csv_value(const std::string& text) {
    return text.find(',') == std::string::npos ? text : "\"" + text + "\"";
}

// The report's totals, one `total` row per metric (docs/report-csv.md): the
// frames, skip counts, flow counts with their bounds, distinct totals and
// interface counters that a heavy-hitter row cannot carry.
void append_totals(std::back_insert_iterator<std::string> out, const Report& report) {
    const auto metric = [&](const std::string& name, const std::string& value) {
        fmt::format_to(out, "{},{:.6f},{:.6f},total,,,,,,,,,{},{},{},{},,,,,,{},{:#018x},{},{},,,\n",
                       kind_name(report.kind), report.start, report.end, report.packets, report.bytes,
                       report.sketch.epsilon, report.sketch.delta, csv_value(report.probe), report.seed,
                       csv_value(name), value);
    };
    const auto whole = [](double value) {
        return std::isfinite(value) ? fmt::format("{:.0f}", std::max(value, 0.0)) : std::string();
    };
    metric("frames", std::to_string(report.frames));
    metric("packets", std::to_string(report.packets));
    metric("bytes", std::to_string(report.bytes));
    for (const SkipCount& skip : report.skipped) metric("skipped." + skip.name, std::to_string(skip.count));
    metric("truncated", report.truncated ? "1" : "0");
    metric("counts_are_lower_bounds", report.counts_are_lower_bounds ? "1" : "0");
    if (report.has_flows) {
        const core::FlowCounts& f = report.flows.counts;
        metric("flows.new", std::to_string(f.new_flows));
        metric("flows.new_undercount_bound", whole(std::ceil(f.new_undercount_bound)));
        metric("flows.active", whole(std::round(f.active)));
        metric("flows.active_lower", whole(std::floor(f.active_lower)));
        metric("flows.active_upper", whole(std::ceil(f.active_upper)));
        metric("flows.expired", whole(std::round(f.expired)));
        metric("flows.expired_stderr", fmt::format("{:.2f}", f.expired_stderr));
        metric("flows.ended", std::to_string(f.ended));
        metric("flows.ended_undercount_bound", whole(std::ceil(f.ended_undercount_bound)));
        metric("flows.fpr", fmt::format("{:.3g}", f.fpr));
    }
    if (report.has_distinct_totals) {
        const std::pair<const char*, const core::DistinctBounds*> totals[] = {
            {"flows", &report.distinct_totals.flows},
            {"sources", &report.distinct_totals.sources},
            {"destinations", &report.distinct_totals.destinations}};
        for (const auto& [name, bounds] : totals) {
            const std::string prefix = std::string("distinct.") + name;
            metric(prefix, whole(std::round(bounds->estimate)));
            metric(prefix + "_lower", whole(std::floor(bounds->lower)));
            metric(prefix + "_upper", whole(std::ceil(bounds->upper)));
        }
    }
    for (const InterfaceReport& interface : report.interfaces) {
        const std::string prefix = "interface." + interface.name + ".";
        metric(prefix + "frames", std::to_string(interface.frames));
        metric(prefix + "received", std::to_string(interface.received));
        metric(prefix + "dropped", std::to_string(interface.dropped));
        metric(prefix + "if_dropped", std::to_string(interface.if_dropped));
    }
    for (const core::NamedCount& tunnel : report.tunnels.inner) metric("tunnels." + tunnel.name, std::to_string(tunnel.count));
    for (const core::NamedCount& reason : report.tunnels.outer_keyed) {
        metric("tunnels.outer_keyed." + reason.name, std::to_string(reason.count));
    }
}

// --verify: one `verify` row per number of the section (docs/verify.md), laid
// out as the `total` rows, with the key spec checked in the `key` column.
void append_verify(std::back_insert_iterator<std::string> out, const Report& report) {
    for (const VerifyMetric& row : verify_metrics(report)) {
        fmt::format_to(out, "{},{:.6f},{:.6f},verify,,,,,,,,,{},{},{},{},,{},,,,{},{:#018x},{},{},\n",
                       kind_name(report.kind), report.start, report.end, report.packets, report.bytes,
                       report.sketch.epsilon, report.sketch.delta, csv_value(row.key), csv_value(report.probe),
                       report.seed, csv_value(row.metric), row.value);
    }
}

}  // namespace

std::string to_csv_rows(const Report& report) {
    std::string rows;
    auto out = std::back_inserter(rows);
    // A row per listed key: the fields its spec keeps, the others empty.
    const auto append = [&](const char* ranking, const core::TopList& list,
                            const std::vector<core::DistinctBounds>* counts) {
        for (std::size_t r = 0; r < list.size(); ++r) {
            const core::HeavyHitter& row = list[r];
            const std::size_t rank = r + 1;
            std::string proto, src, dst, sport, dport, vlan, vni, tunnel;
            for (KeyFieldText& field : key_fields(row.key, list.spec)) {
                std::string& column = field.name == "proto" ? proto
                                      : field.name == "src" ? src
                                      : field.name == "dst" ? dst
                                      : field.name == "sport" ? sport
                                      : field.name == "vlan"  ? vlan
                                      : field.name == "vni"  ? vni
                                      : field.name == "tunnel"  ? tunnel
                                                              : dport;
                column = std::move(field.text);
            }
            std::string distinct = ",,";
            if (counts != nullptr) {
                const core::DistinctBounds& d = (*counts)[r];
                distinct = fmt::format("{:.0f},{:.0f},{}", d.estimate, std::floor(d.lower),
                                       std::isfinite(d.upper) ? fmt::format("{:.0f}", std::ceil(d.upper)) : "");
            }
            fmt::format_to(out, "{},{:.6f},{:.6f},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:#018x},,,{},{},{}\n",
                           kind_name(report.kind), report.start, report.end, ranking, rank, proto, src, dst, sport,
                           dport, row.estimate, row.lower, report.packets, report.bytes, report.sketch.epsilon,
                           report.sketch.delta, row.shares_cells ? 1 : 0, csv_value(list.spec.name()), distinct,
                           csv_value(report.probe), report.seed, vlan, vni, tunnel);
        }
    };
    append("packets", report.top_packets, nullptr);
    append("bytes", report.top_bytes, nullptr);
    for (const core::KeyTops& key : report.keys) {
        append("packets", key.top_packets, key.has_distinct ? &key.distinct_packets : nullptr);
        append("bytes", key.top_bytes, key.has_distinct ? &key.distinct_bytes : nullptr);
        if (key.has_distinct) append("distinct", key.top_distinct.list, &key.top_distinct.distinct);
    }
    append_totals(out, report);
    if (report.has_verify) append_verify(out, report);
    return rows;
}

namespace {

class CsvFormat final : public ReportFormat {
public:
    std::string begin(bool output_was_empty) const override { return output_was_empty ? csv_header() : ""; }
    std::string render(const Report& report) const override { return to_csv_rows(report); }
};

}  // namespace

FormatEntry csv_format() {
    return {"csv", "a row per heavy hitter", [] { return std::make_unique<CsvFormat>(); }};
}

}  // namespace flowsketch::reports
