// JSON Lines rendering. The field set is a contract (docs/report-json.md):
// fields may be added, never renamed or dropped.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string>
#include <utility>

#include "reports/format_registry.hpp"
#include "reports/formats/json.hpp"
#include "reports/formats/verify_section.hpp"
#include "reports/key_format.hpp"

namespace flowsketch::reports {
namespace {

using Out = std::back_insert_iterator<std::string>;

void append_json_string(Out out, std::string_view text) {
    *out++ = '"';
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '"': fmt::format_to(out, "\\\""); break;
            case '\\': fmt::format_to(out, "\\\\"); break;
            case '\n': fmt::format_to(out, "\\n"); break;
            case '\r': fmt::format_to(out, "\\r"); break;
            case '\t': fmt::format_to(out, "\\t"); break;
            default:
                if (c < 0x20) {
                    fmt::format_to(out, "\\u{:04x}", static_cast<unsigned>(c));
                } else {
                    *out++ = ch;
                }
        }
    }
    *out++ = '"';
}

// JSON has no NaN/Infinity; a bound that is not finite is written as null.
void append_number(Out out, double value) {
    if (std::isfinite(value)) {
        fmt::format_to(out, "{}", value);
    } else {
        fmt::format_to(out, "null");
    }
}

enum class Rounding { nearest, down, up };

// A count as the integer a reader means; not finite (no bound) as null.
void append_count(Out out, double value, Rounding rounding) {
    if (!std::isfinite(value)) {
        fmt::format_to(out, "null");
        return;
    }
    value = std::max(value, 0.0);
    value = rounding == Rounding::nearest ? std::round(value)
            : rounding == Rounding::down  ? std::floor(value)
                                          : std::ceil(value);
    fmt::format_to(out, "{}", static_cast<std::uint64_t>(value));
}

void append_key_fields(Out out, const core::FlowKey& key, const core::KeySpec& spec) {
    for (const KeyFieldText& field : key_fields(key, spec)) {
        if (field.numeric) {
            fmt::format_to(out, "\"{}\":{},", field.name, field.text);
        } else {
            fmt::format_to(out, "\"{}\":", field.name);
            append_json_string(out, field.text);
            *out++ = ',';
        }
    }
}

// `"NAME":E,"NAME_lower":L,"NAME_upper":U`: a distinct count as the integer a
// reader wants, its bounds rounded outwards (they stay bounds).
void append_distinct(Out out, std::string_view name, const core::DistinctBounds& bounds) {
    fmt::format_to(out, "\"{}\":{:.0f},\"{}_lower\":{:.0f},\"{}_upper\":", name, bounds.estimate, name,
                   std::floor(bounds.lower), name);
    append_number(out, std::ceil(bounds.upper));
}

// `"estimate":E,"lower":L,"upper":U` of a total, rounded as append_distinct.
void append_bounds(Out out, const core::DistinctBounds& bounds) {
    fmt::format_to(out, "\"estimate\":{:.0f},\"lower\":{:.0f},\"upper\":", bounds.estimate, std::floor(bounds.lower));
    append_number(out, std::ceil(bounds.upper));
}

// `distinct`: the rows' distinct counts (specs that count them), or null.
void append_rows(Out out, const core::TopList& list, const std::vector<core::DistinctBounds>* distinct = nullptr) {
    *out++ = '[';
    for (std::size_t r = 0; r < list.size(); ++r) {
        const core::HeavyHitter& row = list[r];
        if (r != 0) *out++ = ',';
        *out++ = '{';
        append_key_fields(out, row.key, list.spec);
        fmt::format_to(out, "\"estimate\":{},\"lower\":{},\"shares_cells\":{}", row.estimate, row.lower,
                       row.shares_cells);
        if (distinct != nullptr) {
            *out++ = ',';
            append_distinct(out, "distinct", (*distinct)[r]);
        }
        *out++ = '}';
    }
    *out++ = ']';
}

// `,"changes":[...],"changes_bytes":[...]` of an interval report.
void append_changes(Out out, const core::ChangeList& by_packets, const core::ChangeList& by_bytes) {
    for (const core::ChangeList* list : {&by_packets, &by_bytes}) {
        fmt::format_to(out, ",\"{}\":[", list == &by_packets ? "changes" : "changes_bytes");
        bool first = true;
        for (const core::KeyChange& row : *list) {
            if (!first) *out++ = ',';
            first = false;
            *out++ = '{';
            append_key_fields(out, row.key, list->spec);
            fmt::format_to(out, "\"previous\":{},\"current\":{},\"change\":{},\"bound\":", row.previous, row.current,
                           row.change);
            append_number(out, list->bound);
            *out++ = '}';
        }
        *out++ = ']';
    }
}

// The extra key specs' lists, one entry each; absent without --key.
void append_keys(Out out, const std::vector<core::KeyTops>& keys, bool interval) {
    if (keys.empty()) return;
    fmt::format_to(out, ",\"keys\":[");
    bool first = true;
    for (const core::KeyTops& key : keys) {
        if (!first) *out++ = ',';
        first = false;
        fmt::format_to(out, "{{\"spec\":");
        append_json_string(out, key.top_packets.spec.name());
        fmt::format_to(out, ",\"top_packets\":");
        append_rows(out, key.top_packets, key.has_distinct ? &key.distinct_packets : nullptr);
        fmt::format_to(out, ",\"top_bytes\":");
        append_rows(out, key.top_bytes, key.has_distinct ? &key.distinct_bytes : nullptr);
        if (interval) append_changes(out, key.changes_packets, key.changes_bytes);
        if (key.has_distinct) {
            fmt::format_to(out, ",\"top_distinct\":");
            append_rows(out, key.top_distinct.list, &key.top_distinct.distinct);
            fmt::format_to(out, ",\"distinct_pairs\":{{");
            append_bounds(out, key.distinct_pairs);
            *out++ = '}';
        }
        fmt::format_to(out, ",\"memory_bytes\":{}}}", key.memory_bytes);
    }
    *out++ = ']';
}

}  // namespace

std::string to_json(const Report& report) {
    std::string text;
    text.reserve(1024);
    auto out = std::back_inserter(text);
    if (report.no_packet_time) {
        // No frame, no time: null, not a window in 1970.
        fmt::format_to(out, "{{\"kind\":\"{}\",\"start\":null,\"end\":null,\"frames\":{},"
                            "\"packets\":{},\"bytes\":{},\"skipped\":{{",
                       kind_name(report.kind), report.frames, report.packets, report.bytes);
    } else {
        fmt::format_to(out, "{{\"kind\":\"{}\",\"start\":{:.6f},\"end\":{:.6f},\"frames\":{},"
                            "\"packets\":{},\"bytes\":{},\"skipped\":{{",
                       kind_name(report.kind), report.start, report.end, report.frames,
                       report.packets, report.bytes);
    }
    bool first = true;
    for (const auto& skip : report.skipped) {
        if (!first) *out++ = ',';
        first = false;
        append_json_string(out, skip.name);
        fmt::format_to(out, ":{}", skip.count);
    }
    *out++ = '}';
    if (!report.tunnels.inner.empty()) {
        fmt::format_to(out, ",\"tunnels\":{{");
        for (const auto& tunnel : report.tunnels.inner) {
            append_json_string(out, tunnel.name);
            fmt::format_to(out, ":{},", tunnel.count);
        }
        fmt::format_to(out, "\"outer_keyed\":{{");
        first = true;
        for (const auto& reason : report.tunnels.outer_keyed) {
            if (!first) *out++ = ',';
            first = false;
            append_json_string(out, reason.name);
            fmt::format_to(out, ":{}", reason.count);
        }
        fmt::format_to(out, "}}}}");
    }
    fmt::format_to(out, ",\"epsilon\":");
    append_number(out, report.sketch.epsilon);
    fmt::format_to(out, ",\"delta\":");
    append_number(out, report.sketch.delta);
    fmt::format_to(out, ",\"cms\":{{\"width\":{},\"depth\":{},\"variant\":\"{}\","
                        "\"conservative\":{}}},\"memory_bytes\":{},\"top_packets\":",
                   report.sketch.width, report.sketch.depth, report.sketch.variant,
                   report.sketch.conservative_update, report.sketch.memory_bytes);
    append_rows(out, report.top_packets);
    fmt::format_to(out, ",\"top_bytes\":");
    append_rows(out, report.top_bytes);
    const bool interval = report.kind == ReportKind::interval;
    if (interval) append_changes(out, report.changes_packets, report.changes_bytes);
    append_keys(out, report.keys, interval);
    if (report.has_distinct_totals) {
        fmt::format_to(out, ",\"distinct\":{{");
        const std::pair<const char*, const core::DistinctBounds*> totals[] = {
            {"flows", &report.distinct_totals.flows},
            {"sources", &report.distinct_totals.sources},
            {"destinations", &report.distinct_totals.destinations}};
        bool first_total = true;
        for (const auto& [name, bounds] : totals) {
            fmt::format_to(out, "{}\"{}\":{{", first_total ? "" : ",", name);
            first_total = false;
            append_bounds(out, *bounds);
            *out++ = '}';
        }
        *out++ = '}';
    }
    if (report.has_flows) {
        const core::FlowCounts& f = report.flows.counts;
        // Counts as the integers a reader means (estimates rounded, lower bounds
        // down, upper bounds up); `precise` keeps every rounded number whole.
        const auto hundredths = [](double value) { return std::round(value * 100.0) / 100.0; };
        fmt::format_to(out, ",\"flows\":{{\"new\":{},\"active\":", f.new_flows);
        append_count(out, f.active, Rounding::nearest);
        fmt::format_to(out, ",\"expired\":");
        append_count(out, f.expired, Rounding::nearest);
        fmt::format_to(out, ",\"ended\":{},\"fpr\":", f.ended);
        append_number(out, f.fpr);
        fmt::format_to(out, ",\"new_undercount_bound\":");
        append_count(out, f.new_undercount_bound, Rounding::up);
        fmt::format_to(out, ",\"active_stderr\":");
        append_number(out, hundredths(f.active_stderr));
        fmt::format_to(out, ",\"active_lower\":");
        append_count(out, f.active_lower, Rounding::down);
        fmt::format_to(out, ",\"active_upper\":");
        append_count(out, f.active_upper, Rounding::up);
        fmt::format_to(out, ",\"expired_stderr\":");
        append_number(out, hundredths(f.expired_stderr));
        fmt::format_to(out, ",\"ended_undercount_bound\":");
        append_count(out, f.ended_undercount_bound, Rounding::up);
        const std::pair<const char*, double> rates[] = {
            {"max_fpr", f.max_fpr},
            {"target_fpr", f.target_fpr},
            {"idle_timeout", report.flows.idle_timeout},
        };
        for (const auto& [name, value] : rates) {
            fmt::format_to(out, ",\"{}\":", name);
            append_number(out, value);
        }
        fmt::format_to(out, ",\"overfilled\":{},\"generations\":{},\"max_flows\":{},"
                            "\"seen_filter\":\"{}\",\"memory_bytes\":{}",
                       f.overfilled, report.flows.generations, report.flows.max_flows,
                       report.flows.seen_filter, report.flows.memory_bytes);
        fmt::format_to(out, ",\"new_undercount_expected\":");
        append_number(out, f.new_undercount_expected);
        const std::pair<const char*, double> precise[] = {
            {"active", f.active},
            {"expired", f.expired},
            {"new_undercount_bound", f.new_undercount_bound},
            {"active_stderr", f.active_stderr},
            {"active_lower", f.active_lower},
            {"active_upper", f.active_upper},
            {"expired_stderr", f.expired_stderr},
            {"ended_undercount_bound", f.ended_undercount_bound},
        };
        fmt::format_to(out, ",\"precise\":{{");
        bool first_precise = true;
        for (const auto& [name, value] : precise) {
            fmt::format_to(out, "{}\"{}\":", first_precise ? "" : ",", name);
            first_precise = false;
            append_number(out, value);
        }
        fmt::format_to(out, "}}}}");
    }
    fmt::format_to(out, ",\"interfaces\":[");
    first = true;
    for (const auto& interface : report.interfaces) {
        if (!first) *out++ = ',';
        first = false;
        fmt::format_to(out, "{{\"name\":");
        append_json_string(out, interface.name);
        fmt::format_to(out, ",\"frames\":{},\"received\":{},\"dropped\":{},\"if_dropped\":{}}}",
                       interface.frames, interface.received, interface.dropped,
                       interface.if_dropped);
    }
    // A replayed file's interfaces: the live entry's fields (no libpcap
    // counters: 0), then where the interface is and what its frames were.
    for (const auto& interface : report.file_interfaces) {
        if (!first) *out++ = ',';
        first = false;
        fmt::format_to(out, "{{\"name\":");
        append_json_string(out, interface.name);
        fmt::format_to(out, ",\"frames\":{},\"received\":0,\"dropped\":0,\"if_dropped\":0,\"file\":",
                       interface.frames);
        append_json_string(out, interface.file);
        fmt::format_to(out, ",\"index\":{},\"section\":{},\"id\":{},\"link_type\":{},\"link_type_name\":",
                       interface.index, interface.section, interface.id, interface.link_type);
        append_json_string(out, interface.link_type_name);
        fmt::format_to(out, ",\"unsupported_link_type\":{},\"unfiltered\":{}",
                       interface.unsupported_link_type, interface.unfiltered);
        // The file's Interface Statistics Block counters, only where it has them.
        if (interface.if_received) fmt::format_to(out, ",\"isb_ifrecv\":{}", *interface.if_received);
        if (interface.if_dropped) fmt::format_to(out, ",\"isb_ifdrop\":{}", *interface.if_dropped);
        if (interface.os_dropped) fmt::format_to(out, ",\"isb_osdrop\":{}", *interface.os_dropped);
        *out++ = '}';
    }
    fmt::format_to(out, "],\"counts_are_lower_bounds\":{}", report.counts_are_lower_bounds);
    fmt::format_to(out, ",\"truncated\":{},\"warnings\":[", report.truncated);
    first = true;
    for (const auto& warning : report.warnings) {
        if (!first) *out++ = ',';
        first = false;
        append_json_string(out, warning);
    }
    fmt::format_to(out, "],\"probe\":");
    append_json_string(out, report.probe);
    // A string: a 64-bit seed does not survive a reader's doubles.
    fmt::format_to(out, ",\"seed\":\"{:#018x}\"", report.seed);
    if (report.has_clickhouse) {
        const ClickHouseExportCounts& export_counts = report.clickhouse;
        fmt::format_to(out,
                       ",\"clickhouse_delivered_intervals\":{},\"clickhouse_undelivered_intervals\":{},"
                       "\"clickhouse_spilled_intervals\":{},\"clickhouse_queued_intervals\":{},"
                       "\"clickhouse_retries\":{}",
                       export_counts.delivered, export_counts.undelivered, export_counts.spilled,
                       export_counts.queued, export_counts.retries);
    }
    if (report.has_verify) text += verify_json(report);
    *out++ = '}';
    return text;
}

namespace {

class JsonFormat final : public ReportFormat {
public:
    std::string render(const Report& report) const override { return to_json(report) + "\n"; }
};

}  // namespace

FormatEntry json_format() {
    return {"json", "JSON Lines, one object per report",
            [] { return std::make_unique<JsonFormat>(); }};
}

}  // namespace flowsketch::reports
