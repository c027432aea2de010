// The report for a person: an aligned table, readable endpoints, big numbers
// with separators, and the bound that qualifies every estimate.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "reports/format_registry.hpp"
#include "reports/formats/text.hpp"
#include "reports/formats/verify_section.hpp"
#include "reports/key_format.hpp"
#include "reports/number_format.hpp"

namespace flowsketch::reports {

namespace {

std::string utc_time(double unix_seconds) {
    const auto whole = static_cast<std::time_t>(std::floor(unix_seconds));
    const auto millis = static_cast<int>((unix_seconds - std::floor(unix_seconds)) * 1000.0);
    std::tm tm{};
    gmtime_r(&whole, &tm);
    char buffer[32];
    std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M:%S", &tm);
    return fmt::format("{}.{:03d}", buffer, std::min(millis, 999));
}

void append_table(std::string& text, const char* title, const char* unit,
                  const core::TopList& flows, std::uint64_t total, double epsilon) {
    auto out = std::back_inserter(text);
    fmt::format_to(out, "\n  Top flows by {} (N = {}, ε·N = {:.1f})\n", title, with_separators(total),
                   epsilon * static_cast<double>(total));
    if (flows.empty()) {
        fmt::format_to(out, "    (none)\n");
        return;
    }
    std::size_t src_width = 6, dst_width = 11;
    for (const auto& flow : flows) {
        src_width = std::max(src_width, endpoint(flow.key, true).size());
        dst_width = std::max(dst_width, endpoint(flow.key, false).size());
    }
    fmt::format_to(out, "    {:>3}  {:<7} {:<{}}    {:<{}}  {:>15}  {:>15}  {:>6}\n", "#", "proto",
                   "source", src_width, "destination", dst_width, unit, "lower bound", "share");
    int rank = 1;
    for (const auto& flow : flows) {
        const double share =
            total == 0 ? 0.0 : 100.0 * static_cast<double>(flow.estimate) / static_cast<double>(total);
        fmt::format_to(out, "    {:>3}  {:<7} {:<{}} -> {:<{}}  {:>15}  {:>15}  {:>5.1f}%\n", rank++,
                       protocol_name(flow.key.protocol), endpoint(flow.key, true), src_width,
                       endpoint(flow.key, false), dst_width, with_separators(flow.estimate),
                       with_separators(flow.lower), share);
        if (flow.shares_cells) fmt::format_to(out, "         ^ shares every sketch cell with another candidate: the lower bound is what it sent since it became one\n");
    }
}

// An upper bound as a reader wants it: an integer, rounded up, or "∞".
std::string bounded_text(double upper) {
    if (!std::isfinite(upper)) return "∞";
    return with_separators(static_cast<std::uint64_t>(std::ceil(upper)));
}

// An extra key spec's list: one column per field the spec keeps.
// `distinct`: the rows' distinct counts (specs that count them), or null;
// `by_distinct`: the list is ranked by them, not by `title`'s weight.
void append_key_table(std::string& text, const char* title, const core::TopList& list, double epsilon,
                      const std::vector<core::DistinctBounds>* distinct = nullptr, bool by_distinct = false) {
    auto out = std::back_inserter(text);
    if (by_distinct) {
        fmt::format_to(out, "\n  Top {} by {}\n", list.spec.name(), title);
    } else {
        fmt::format_to(out, "\n  Top {} by {} (N = {}, ε·N = {:.1f})\n", list.spec.name(), title,
                       with_separators(list.total), epsilon * static_cast<double>(list.total));
    }
    if (list.empty()) {
        fmt::format_to(out, "    (none)\n");
        return;
    }
    std::vector<std::vector<KeyFieldText>> rows;
    for (const auto& row : list) {
        rows.push_back(key_fields(row.key, list.spec));
        for (KeyFieldText& field : rows.back()) {
            if (field.name == "proto") field.text = protocol_name(row.key.protocol);
        }
    }
    std::vector<std::size_t> widths;
    for (const KeyFieldText& field : rows.front()) widths.push_back(std::max<std::size_t>(field.name.size(), 5));
    for (const auto& fields : rows) {
        for (std::size_t f = 0; f < fields.size(); ++f) widths[f] = std::max(widths[f], fields[f].text.size());
    }
    fmt::format_to(out, "    {:>3}", "#");
    for (std::size_t f = 0; f < widths.size(); ++f) fmt::format_to(out, "  {:<{}}", rows.front()[f].name, widths[f]);
    fmt::format_to(out, "  {:>15}  {:>15}  {:>6}", by_distinct ? "packets" : title, "lower bound", "share");
    if (distinct != nullptr) fmt::format_to(out, "  {:>10}  {:>21}", "distinct", "bounds");
    *out++ = '\n';
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const core::HeavyHitter& row = list[r];
        const double share =
            list.total == 0 ? 0.0 : 100.0 * static_cast<double>(row.estimate) / static_cast<double>(list.total);
        fmt::format_to(out, "    {:>3}", r + 1);
        for (std::size_t f = 0; f < widths.size(); ++f) fmt::format_to(out, "  {:<{}}", rows[r][f].text, widths[f]);
        fmt::format_to(out, "  {:>15}  {:>15}  {:>5.1f}%", with_separators(row.estimate), with_separators(row.lower),
                       share);
        if (distinct != nullptr) {
            const core::DistinctBounds& d = (*distinct)[r];
            const std::string bounds =
                fmt::format("[{}, {}]", with_separators(static_cast<std::uint64_t>(std::floor(d.lower))),
                            bounded_text(d.upper));
            fmt::format_to(out, "  {:>10}  {:>21}",
                           with_separators(static_cast<std::uint64_t>(std::llround(d.estimate))), bounds);
        }
        *out++ = '\n';
        if (row.shares_cells) {
            fmt::format_to(out, "         ^ shares every sketch cell with another candidate: the lower bound is what it sent since it became one\n");
        }
    }
}

// "What changed": the keys whose count moved most since the previous
// interval, with the bound on each change.
void append_changes(std::string& text, const char* unit, const core::ChangeList& list) {
    if (!list.has_previous) return;
    auto out = std::back_inserter(text);
    fmt::format_to(out, "\n  What changed by {} ({}; previous interval N = {}, this one {}; each change ± {:.1f})\n",
                   unit, list.spec.name(), with_separators(list.previous_total), with_separators(list.current_total),
                   list.bound);
    if (list.empty()) {
        fmt::format_to(out, "    (nothing)\n");
        return;
    }
    for (const core::KeyChange& row : list) {
        std::string key;
        for (KeyFieldText& field : key_fields(row.key, list.spec)) {
            if (field.name == "proto") field.text = protocol_name(row.key.protocol);
            key += (key.empty() ? "" : " ") + std::string(field.name) + " " + field.text;
        }
        const std::string change = (row.change > 0 ? "+" : "-") +
                                   with_separators(static_cast<std::uint64_t>(row.change > 0 ? row.change : -row.change));
        fmt::format_to(out, "    {:>15}  {} -> {}  {}\n", change, with_separators(row.previous),
                       with_separators(row.current), key);
    }
}

}  // namespace

std::string to_text(const Report& report) {
    std::string text;
    auto out = std::back_inserter(text);
    const char* title = report.kind == ReportKind::interval ? "interval" : "final report";
    if (report.no_packet_time) {
        fmt::format_to(out, "== flowsketch {}: no frame read, no packet time\n", title);
    } else {
        fmt::format_to(out, "== flowsketch {}: {} -> {} UTC ({:.3f} s)\n", title,
                       utc_time(report.start), utc_time(report.end), report.end - report.start);
    }
    if (!report.probe.empty()) {
        fmt::format_to(out, "  probe {}   seed {:#018x}\n", report.probe, report.seed);
    }
    fmt::format_to(out, "  frames {}   IP packets {}   bytes {}\n", with_separators(report.frames),
                   with_separators(report.packets), with_separators(report.bytes));
    std::string skipped;
    for (const auto& skip : report.skipped) {
        if (skip.count == 0) continue;
        skipped += fmt::format("{}{} {}", skipped.empty() ? "" : ", ", skip.name,
                               with_separators(skip.count));
    }
    fmt::format_to(out, "  skipped: {}\n", skipped.empty() ? "none" : skipped);
    const auto nonzero = [](const std::vector<core::NamedCount>& counts) {
        std::string listed;
        for (const auto& count : counts) {
            if (count.count == 0) continue;
            listed += fmt::format("{}{} {}", listed.empty() ? "" : ", ", count.name,
                                  with_separators(count.count));
        }
        return listed;
    };
    if (const std::string inner = nonzero(report.tunnels.inner); !inner.empty()) {
        fmt::format_to(out, "  tunnelled, keyed by the inner flow: {}\n", inner);
    }
    if (const std::string outer = nonzero(report.tunnels.outer_keyed); !outer.empty()) {
        fmt::format_to(out, "  tunnelled, keyed by the outer header: {}\n", outer);
    }
    for (const auto& interface : report.interfaces) {
        fmt::format_to(out, "  interface {}: frames {}, received {}, dropped by kernel {}, by interface {}\n",
                       interface.name, with_separators(interface.frames),
                       with_separators(interface.received), with_separators(interface.dropped),
                       with_separators(interface.if_dropped));
        if (interface.name == "lo" || interface.name == "any") {
            fmt::format_to(out, "    (received counts each loopback frame twice: the kernel hands libpcap "
                                "its outgoing and its incoming copy, and libpcap keeps one)\n");
        }
    }
    for (const auto& interface : report.file_interfaces) {
        fmt::format_to(out, "  interface {} ({} #{}, link type {}): frames {}", interface.name,
                       interface.file, interface.index, interface.link_type_name,
                       with_separators(interface.frames));
        if (interface.unsupported_link_type != 0) {
            fmt::format_to(out, ", not decoded (unsupported_link_type) {}",
                           with_separators(interface.unsupported_link_type));
        }
        if (interface.unfiltered != 0) {
            fmt::format_to(out, ", not counted (the filter does not compile for the link type) {}",
                           with_separators(interface.unfiltered));
        }
        // The file's own counters (pcapng Interface Statistics Block), where it has them.
        std::string counted;
        const auto note = [&](const char* what, const std::optional<std::uint64_t>& value) {
            if (value) counted += (counted.empty() ? "" : ", ") + std::string(what) + " " + with_separators(*value);
        };
        note("received", interface.if_received);
        note("dropped by the interface", interface.if_dropped);
        note("dropped by the system", interface.os_dropped);
        if (!counted.empty()) fmt::format_to(out, "; the file's counters: {}", counted);
        *out++ = '\n';
    }
    if (report.counts_are_lower_bounds) {
        fmt::format_to(out, "  note: frames were dropped before flowsketch saw them; every count "
                            "and bound below is a lower bound for this span\n");
    }
    const auto& s = report.sketch;
    fmt::format_to(out,
                   "  Count-Min {}{}: width {} x depth {} (all state: {} KiB, fixed); ε = {:.4g}, δ = {:.3g}: every "
                   "true count lies in [lower bound, estimate] with probability ≥ {:.4f}%\n",
                   s.variant, s.conservative_update ? " (conservative update)" : "",
                   with_separators(s.width), s.depth, with_separators(s.memory_bytes / 1024),
                   s.epsilon, s.delta, 100.0 * (1.0 - s.delta));
    if (report.has_flows) {
        const auto& flows = report.flows;
        const auto& f = flows.counts;
        fmt::format_to(out,
                       "  Flows ({} seen filter for {} active flows, {} KiB; idle timeout {:g} s, "
                       "expiry within {:g} s after it):\n",
                       flows.seen_filter, with_separators(flows.max_flows),
                       with_separators(flows.memory_bytes / 1024), flows.idle_timeout,
                       flows.idle_timeout / std::max<std::uint32_t>(flows.generations, 1));
        fmt::format_to(out,
                       "    new {} (may miss up to {}, p ≥ 0.999)   active {} ± {}   expired {} ± {}   "
                       "ended (FIN/RST) {}   seen-filter fpr {:.2g} (target {:.2g})\n",
                       with_separators(f.new_flows), rounded(std::ceil(f.new_undercount_bound)),
                       rounded(f.active), rounded(f.active_stderr), rounded(f.expired),
                       rounded(f.expired_stderr), with_separators(f.ended), f.fpr, f.target_fpr);
    }
    append_table(text, "packets", "packets", report.top_packets, report.packets, s.epsilon);
    append_table(text, "bytes", "bytes", report.top_bytes, report.bytes, s.epsilon);
    if (report.kind == ReportKind::interval) {
        append_changes(text, "packets", report.changes_packets);
        append_changes(text, "bytes", report.changes_bytes);
    }
    for (const core::KeyTops& key : report.keys) {
        fmt::format_to(out, "\n  Key {} ({} KiB of state, fixed)", key.top_packets.spec.name(),
                       with_separators(key.memory_bytes / 1024));
        append_key_table(text, "packets", key.top_packets, s.epsilon, key.has_distinct ? &key.distinct_packets : nullptr);
        append_key_table(text, "bytes", key.top_bytes, s.epsilon, key.has_distinct ? &key.distinct_bytes : nullptr);
        if (key.has_distinct) {
            const std::string spec = key.top_distinct.list.spec.name();
            const std::string ranking = "distinct " + spec.substr(spec.find('=') + 1);
            append_key_table(text, ranking.c_str(), key.top_distinct.list, s.epsilon, &key.top_distinct.distinct, true);
            fmt::format_to(out, "    distinct (key, {}) pairs: {} [{}, {}]\n", spec.substr(spec.find('=') + 1),
                           with_separators(static_cast<std::uint64_t>(std::llround(key.distinct_pairs.estimate))),
                           with_separators(static_cast<std::uint64_t>(std::floor(key.distinct_pairs.lower))),
                           bounded_text(key.distinct_pairs.upper));
        }
        if (report.kind == ReportKind::interval) {
            append_changes(text, "packets", key.changes_packets);
            append_changes(text, "bytes", key.changes_bytes);
        }
    }
    if (report.has_distinct_totals) {
        fmt::format_to(out, "\n  Distinct (with bounds)\n");
        const std::pair<const char*, const core::DistinctBounds*> totals[] = {
            {"flows", &report.distinct_totals.flows},
            {"sources", &report.distinct_totals.sources},
            {"destinations", &report.distinct_totals.destinations}};
        for (const auto& [name, bounds] : totals) {
            fmt::format_to(out, "    {:<13} {:>12}  [{}, {}]\n", name,
                           with_separators(static_cast<std::uint64_t>(std::llround(bounds->estimate))),
                           with_separators(static_cast<std::uint64_t>(std::floor(bounds->lower))),
                           bounded_text(bounds->upper));
        }
    }
    if (report.has_verify) text += verify_text(report);
    if (report.has_clickhouse) {
        const ClickHouseExportCounts& export_counts = report.clickhouse;
        fmt::format_to(out, "  clickhouse: {} intervals delivered, {} undelivered ({} spilled), {} queued, {} retries\n",
                       export_counts.delivered, export_counts.undelivered, export_counts.spilled,
                       export_counts.queued, export_counts.retries);
    }
    for (const auto& warning : report.warnings) fmt::format_to(out, "  warning: {}\n", warning);
    text.push_back('\n');
    return text;
}

namespace {

class TextFormat final : public ReportFormat {
public:
    std::string render(const Report& report) const override { return to_text(report); }
};

}  // namespace

FormatEntry text_format() {
    return {"text", "a table for a person", [] { return std::make_unique<TextFormat>(); }};
}

}  // namespace flowsketch::reports
