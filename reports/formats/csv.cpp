// CSV rendering: one row per heavy hitter per report, for spreadsheets and
// tools that want flat rows. Columns are a contract (docs/report-csv.md):
// new columns are added at the end, never renamed, dropped or reordered.
#include <fmt/format.h>

#include <cmath>
#include <iterator>

#include "reports/format_registry.hpp"
#include "reports/formats/csv.hpp"
#include "reports/key_format.hpp"

namespace flowsketch::reports {

std::string csv_header() {
    return "kind,start,end,ranking,rank,proto,src,dst,sport,dport,estimate,lower,"
           "window_packets,window_bytes,epsilon,delta,shares_cells,key,distinct,distinct_lower,distinct_upper,vlan\n";
}

namespace {

// RFC 4180: a value with a comma is quoted (a key spec such as dst/24,64).
std::string csv_value(const std::string& text) {
    return text.find(',') == std::string::npos ? text : "\"" + text + "\"";
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
            std::string proto, src, dst, sport, dport, vlan;
            for (KeyFieldText& field : key_fields(row.key, list.spec)) {
                std::string& column = field.name == "proto" ? proto
                                      : field.name == "src" ? src
                                      : field.name == "dst" ? dst
                                      : field.name == "sport" ? sport
                                      : field.name == "vlan"  ? vlan
                                                              : dport;
                column = std::move(field.text);
            }
            std::string distinct = ",,";
            if (counts != nullptr) {
                const core::DistinctBounds& d = (*counts)[r];
                distinct = fmt::format("{:.0f},{:.0f},{}", d.estimate, std::floor(d.lower),
                                       std::isfinite(d.upper) ? fmt::format("{:.0f}", std::ceil(d.upper)) : "");
            }
            fmt::format_to(out, "{},{:.6f},{:.6f},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                           kind_name(report.kind), report.start, report.end, ranking, rank, proto, src, dst, sport,
                           dport, row.estimate, row.lower, report.packets, report.bytes, report.sketch.epsilon,
                           report.sketch.delta, row.shares_cells ? 1 : 0, csv_value(list.spec.name()), distinct, vlan);
        }
    };
    append("packets", report.top_packets, nullptr);
    append("bytes", report.top_bytes, nullptr);
    for (const core::KeyTops& key : report.keys) {
        append("packets", key.top_packets, key.has_distinct ? &key.distinct_packets : nullptr);
        append("bytes", key.top_bytes, key.has_distinct ? &key.distinct_bytes : nullptr);
        if (key.has_distinct) append("distinct", key.top_distinct.list, &key.top_distinct.distinct);
    }
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
