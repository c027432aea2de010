// The report for a person: an aligned table, readable endpoints, big numbers
// with separators, and the bound that qualifies every estimate.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <iterator>
#include <string>

#include "reports/format_registry.hpp"
#include "reports/formats/text.hpp"
#include "reports/key_format.hpp"

namespace flowsketch::reports {

namespace {

std::string with_separators(std::uint64_t value) {
    std::string digits = std::to_string(value);
    std::string out;
    out.reserve(digits.size() + digits.size() / 3);
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
        out.push_back(digits[i]);
    }
    return out;
}

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
        if (flow.shares_cells) fmt::format_to(out, "         ^ shares every sketch cell with another flow listed: estimate bounds their sum\n");
    }
}

}  // namespace

std::string to_text(const Report& report) {
    std::string text;
    auto out = std::back_inserter(text);
    const char* title = report.kind == ReportKind::interval ? "interval" : "final report";
    fmt::format_to(out, "== flowsketch {}: {} -> {} UTC ({:.3f} s)\n", title, utc_time(report.start),
                   utc_time(report.end), report.end - report.start);
    fmt::format_to(out, "  frames {}   IP packets {}   bytes {}\n", with_separators(report.frames),
                   with_separators(report.packets), with_separators(report.bytes));
    std::string skipped;
    for (const auto& skip : report.skipped) {
        if (skip.count == 0) continue;
        skipped += fmt::format("{}{} {}", skipped.empty() ? "" : ", ", skip.name,
                               with_separators(skip.count));
    }
    fmt::format_to(out, "  skipped: {}\n", skipped.empty() ? "none" : skipped);
    for (const auto& interface : report.interfaces) {
        fmt::format_to(out, "  interface {}: frames {}, received {}, dropped by kernel {}, by interface {}\n",
                       interface.name, with_separators(interface.frames),
                       with_separators(interface.received), with_separators(interface.dropped),
                       with_separators(interface.if_dropped));
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
                       "    new {} (may miss up to {:.0f})   active {:.0f} ± {:.0f}   expired "
                       "{:.0f} ± {:.0f}   ended (FIN/RST) {}   seen-filter fpr {:.2g} (target {:.2g})\n",
                       with_separators(f.new_flows), std::ceil(f.new_undercount_bound), f.active,
                       f.active_stderr, f.expired, f.expired_stderr, with_separators(f.ended), f.fpr,
                       f.target_fpr);
    }
    append_table(text, "packets", "packets", report.top_packets, report.packets, s.epsilon);
    append_table(text, "bytes", "bytes", report.top_bytes, report.bytes, s.epsilon);
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
