#include "reports/formats/verify_section.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "reports/number_format.hpp"

namespace flowsketch::reports {
namespace {

using core::DistinctListCheck;
using core::FlowCheck;
using core::ListCheck;

// JSON has no NaN or Infinity: a bound that is not finite is null.
std::string number(double value) { return std::isfinite(value) ? fmt::format("{}", value) : "null"; }

std::string list_json(const ListCheck& c) {
    return fmt::format("{{\"checked\":{},\"max_error\":{},\"bound\":{},\"below_lower\":{},\"recall\":{},"
                       "\"precision\":{},\"exact_top\":{}}}",
                       c.checked, c.max_error, number(c.bound), c.below_lower, number(c.recall),
                       number(c.precision), c.exact_top);
}

std::string distinct_json(const DistinctListCheck& c) {
    return fmt::format("{{\"checked\":{},\"max_error\":{},\"outside\":{},\"recall\":{},\"precision\":{},"
                       "\"exact_top\":{}}}",
                       c.checked, number(c.max_error), c.outside, number(c.recall), number(c.precision),
                       c.exact_top);
}

std::string flow_json(const FlowCheck& c) {
    return fmt::format("{{\"estimate\":{},\"exact\":{},\"lower\":{},\"upper\":{},\"within\":{}}}",
                       number(c.estimate), c.exact, number(c.lower), number(c.upper), c.within);
}

std::string tally_json(const core::BreakTally& t) {
    return fmt::format("{{\"checks\":{},\"breaks\":{},\"probability\":{},\"allowed\":{},\"broken\":{}}}", t.checks,
                       t.breaks, number(t.probability), t.allowed, t.broken());
}

const std::pair<const char*, const FlowCheck core::FlowChecks::*> flow_fields[] = {
    {"new", &core::FlowChecks::new_flows},
    {"active", &core::FlowChecks::active},
    {"expired", &core::FlowChecks::expired},
    {"ended", &core::FlowChecks::ended},
};

std::string percent(double share) { return fmt::format("{:.0f}%", 100.0 * share); }

std::string list_text(const char* name, const ListCheck& c) {
    return fmt::format("    {:<12} checked {:>3}  max error {:>10} (bound ε·N {})  below lower {}  recall {}  "
                       "precision {}\n",
                       name, c.checked, c.max_error, with_separators(static_cast<std::uint64_t>(std::floor(c.bound))),
                       c.below_lower, percent(c.recall), percent(c.precision));
}

}  // namespace

std::string verify_json(const Report& report) {
    const core::VerifySection& v = report.verify;
    std::string out = fmt::format(",\"verify\":{{\"memory_bytes\":{},\"max_flows\":{},\"packets\":{},\"bytes\":{},"
                                  "\"exact_keys\":{},\"top_packets\":{},\"top_bytes\":{},\"keys\":[",
                                  v.memory_bytes, v.max_flows, v.packets, v.bytes, v.exact_keys,
                                  list_json(v.top_packets), list_json(v.top_bytes));
    for (std::size_t k = 0; k < v.keys.size(); ++k) {
        const core::KeyCheck& key = v.keys[k];
        const std::string spec = k < report.keys.size() ? report.keys[k].top_packets.spec.name() : "";
        out += fmt::format("{}{{\"key\":\"{}\",\"exact_keys\":{},\"top_packets\":{},\"top_bytes\":{}", k ? "," : "",
                           spec, key.exact_keys, list_json(key.top_packets), list_json(key.top_bytes));
        if (key.has_distinct) {
            out += fmt::format(",\"top_distinct\":{},\"distinct_pairs\":{{\"estimate\":{},\"exact\":{}}}",
                               distinct_json(key.top_distinct), number(key.distinct_pairs_estimate),
                               key.exact_distinct_pairs);
        }
        out += '}';
    }
    out += ']';
    if (v.has_flows) {
        out += ",\"flows\":{";
        bool first = true;
        for (const auto& [name, field] : flow_fields) {
            out += fmt::format("{}\"{}\":{}", first ? "" : ",", name, flow_json(v.flows.*field));
            first = false;
        }
        out += '}';
    }
    out += fmt::format(",\"strict\":{{\"rows\":{},\"flows\":{},\"broken\":{}}}}}", tally_json(v.rows),
                       tally_json(v.flow_bounds), v.broken());
    return out;
}

std::string verify_text(const Report& report) {
    const core::VerifySection& v = report.verify;
    std::string text;
    auto out = std::back_inserter(text);
    fmt::format_to(out,
                   "\n  Verify (exact counts beside the sketches: {} KiB; {} 5-tuples, {} packets, {} bytes; at "
                   "most {} entries per table)\n",
                   with_separators(v.memory_bytes / 1024), with_separators(v.exact_keys),
                   with_separators(v.packets), with_separators(v.bytes), with_separators(v.max_flows));
    text += list_text("packets", v.top_packets);
    text += list_text("bytes", v.top_bytes);
    for (std::size_t k = 0; k < v.keys.size(); ++k) {
        const core::KeyCheck& key = v.keys[k];
        const std::string spec = k < report.keys.size() ? report.keys[k].top_packets.spec.name() : "";
        fmt::format_to(out, "    key {} ({} keys)\n", spec, with_separators(key.exact_keys));
        text += list_text("  packets", key.top_packets);
        text += list_text("  bytes", key.top_bytes);
        if (key.has_distinct) {
            const DistinctListCheck& d = key.top_distinct;
            fmt::format_to(out,
                           "      {:<10} checked {:>3}  max error {:>10.1f}  outside bounds {}  recall {}  "
                           "precision {}   pairs {} (exact {})\n",
                           "distinct", d.checked, d.max_error, d.outside, percent(d.recall), percent(d.precision),
                           with_separators(static_cast<std::uint64_t>(std::llround(key.distinct_pairs_estimate))),
                           with_separators(key.exact_distinct_pairs));
        }
    }
    if (v.has_flows) {
        text += "    flows       ";
        for (const auto& [name, field] : flow_fields) {
            const FlowCheck& c = v.flows.*field;
            fmt::format_to(out, "  {} {} exact {} {}", name,
                           with_separators(static_cast<std::uint64_t>(std::llround(std::max(c.estimate, 0.0)))),
                           with_separators(c.exact),
                           c.within ? "(in bound)" : "(OUT OF BOUND)");
        }
        text += '\n';
    }
    fmt::format_to(out,
                   "    bounds: {} of {} listed rows below their lower bound ({} allowed at δ = {:.3g}); {} of {} flow "
                   "counts out of bound ({} allowed){}\n",
                   v.rows.breaks, v.rows.checks, v.rows.allowed, v.rows.probability, v.flow_bounds.breaks,
                   v.flow_bounds.checks, v.flow_bounds.allowed,
                   v.broken() ? ": BROKEN more often than δ allows" : "");
    return text;
}

std::vector<VerifyMetric> verify_metrics(const Report& report) {
    const core::VerifySection& v = report.verify;
    std::vector<VerifyMetric> rows;
    const auto list = [&](const std::string& key, const std::string& name, const ListCheck& c) {
        rows.push_back({key, name + ".checked", std::to_string(c.checked)});
        rows.push_back({key, name + ".max_error", std::to_string(c.max_error)});
        rows.push_back({key, name + ".bound", fmt::format("{:.6g}", c.bound)});
        rows.push_back({key, name + ".below_lower", std::to_string(c.below_lower)});
        rows.push_back({key, name + ".recall", fmt::format("{:.6g}", c.recall)});
        rows.push_back({key, name + ".precision", fmt::format("{:.6g}", c.precision)});
    };
    rows.push_back({"", "memory_bytes", std::to_string(v.memory_bytes)});
    list("5tuple", "top_packets", v.top_packets);
    list("5tuple", "top_bytes", v.top_bytes);
    for (std::size_t k = 0; k < v.keys.size(); ++k) {
        const std::string spec = k < report.keys.size() ? report.keys[k].top_packets.spec.name() : "";
        list(spec, "top_packets", v.keys[k].top_packets);
        list(spec, "top_bytes", v.keys[k].top_bytes);
        if (v.keys[k].has_distinct) {
            const DistinctListCheck& d = v.keys[k].top_distinct;
            rows.push_back({spec, "top_distinct.checked", std::to_string(d.checked)});
            rows.push_back({spec, "top_distinct.max_error", fmt::format("{:.6g}", d.max_error)});
            rows.push_back({spec, "top_distinct.outside", std::to_string(d.outside)});
            rows.push_back({spec, "top_distinct.recall", fmt::format("{:.6g}", d.recall)});
            rows.push_back({spec, "top_distinct.precision", fmt::format("{:.6g}", d.precision)});
        }
    }
    if (v.has_flows) {
        for (const auto& [name, field] : flow_fields) {
            const FlowCheck& c = v.flows.*field;
            rows.push_back({"", fmt::format("flows.{}.exact", name), std::to_string(c.exact)});
            rows.push_back({"", fmt::format("flows.{}.within", name), c.within ? "1" : "0"});
        }
    }
    rows.push_back({"", "broken", v.broken() ? "1" : "0"});
    return rows;
}

}  // namespace flowsketch::reports
