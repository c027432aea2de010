// CSV rendering: one row per heavy hitter per report, for spreadsheets and
// tools that want flat rows. Columns are a contract (docs/report-csv.md):
// new columns are added at the end, never renamed, dropped or reordered.
#include <fmt/format.h>

#include <iterator>

#include "reports/format_registry.hpp"
#include "reports/formats/csv.hpp"
#include "reports/key_format.hpp"

namespace flowsketch::reports {

std::string csv_header() {
    return "kind,start,end,ranking,rank,proto,src,dst,sport,dport,estimate,lower,"
           "window_packets,window_bytes,epsilon,delta,shares_cells\n";
}

std::string to_csv_rows(const Report& report) {
    std::string rows;
    auto out = std::back_inserter(rows);
    // Addresses and numbers never contain commas or quotes: no quoting needed.
    const auto append = [&](const char* ranking, const core::TopList& flows) {
        int rank = 1;
        for (const auto& flow : flows) {
            fmt::format_to(out, "{},{:.6f},{:.6f},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                           kind_name(report.kind), report.start, report.end, ranking, rank++,
                           flow.key.protocol, format_address(flow.key, true, flows.spec),
                           format_address(flow.key, false, flows.spec), flow.key.src_port,
                           flow.key.dst_port, flow.estimate, flow.lower, report.packets,
                           report.bytes, report.sketch.epsilon, report.sketch.delta,
                           flow.shares_cells ? 1 : 0);
        }
    };
    append("packets", report.top_packets);
    append("bytes", report.top_bytes);
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
