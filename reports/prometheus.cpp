// Prometheus text format 0.0.4: for each family one HELP and one TYPE line,
// then its samples, all together (the format forbids interleaving families).
// Sample values carry no timestamps: Prometheus stamps them at scrape time.
#include "reports/prometheus.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <vector>

namespace flowsketch::reports {
namespace {

using Out = std::back_insert_iterator<std::string>;

std::string format_double(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    return fmt::format("{}", value);  // shortest text that reads back exactly
}

// An undercount bound as the JSON report states it: a whole number, rounded
// up, so that count + bound is a whole upper bound; +Inf stays +Inf.
double whole_bound(double bound) {
    return std::isfinite(bound) ? std::ceil(std::max(bound, 0.0)) : bound;
}

// One metric family at a time: HELP and TYPE first, then any number of samples.
class FamilyWriter {
public:
    /// `probe`: the probe label every sample carries (none when empty).
    FamilyWriter(std::string& text, std::string_view probe) : out_(std::back_inserter(text)) {
        if (!probe.empty()) probe_label_ = fmt::format("probe=\"{}\"", escape_label_value(probe));
    }

    void family(std::string_view name, std::string_view type, std::string_view help) {
        name_ = name;
        fmt::format_to(out_, "# HELP {} ", name);
        for (const char ch : help) {  // HELP escapes backslash and newline only
            if (ch == '\\') {
                fmt::format_to(out_, "\\\\");
            } else if (ch == '\n') {
                fmt::format_to(out_, "\\n");
            } else {
                *out_++ = ch;
            }
        }
        fmt::format_to(out_, "\n# TYPE {} {}\n", name, type);
    }

    // `labels` is already rendered ("" or `{a="b",...}`).
    void sample(std::string_view labels, std::uint64_t value) {
        fmt::format_to(out_, "{}{} {}\n", name_, with_probe(labels), value);
    }
    void sample(std::string_view labels, double value) {
        fmt::format_to(out_, "{}{} {}\n", name_, with_probe(labels), format_double(value));
    }

private:
    // The probe label first, then the sample's own.
    std::string with_probe(std::string_view labels) const {
        if (probe_label_.empty()) return std::string(labels);
        if (labels.empty()) return "{" + probe_label_ + "}";
        return "{" + probe_label_ + "," + std::string(labels.substr(1));
    }

    Out out_;
    std::string name_;
    std::string probe_label_;
};

struct Label {
    std::string_view name;
    std::string value;
};

std::string render_labels(const std::vector<Label>& labels) {
    if (labels.empty()) return {};
    std::string text = "{";
    bool first = true;
    for (const auto& label : labels) {
        if (!first) text.push_back(',');
        first = false;
        text += label.name;
        text += "=\"";
        text += escape_label_value(label.value);
        text.push_back('"');
    }
    text.push_back('}');
    return text;
}

// The families of one weight: the estimate, its lower bound and the rank.
void render_heavy_hitters(FamilyWriter& writer, std::string_view unit,
                          const std::vector<HeavyHitterSeries::Row>& rows) {
    if (rows.empty()) return;
    writer.family(
        fmt::format("flowsketch_heavy_hitter_{}", unit), "gauge",
        fmt::format("Last complete interval: Count-Min estimate of the {0} of a key in "
                    "the top by {0}, never below the true count; for a key that left the "
                    "top (rank 0), the smallest estimate in the top, which its count does "
                    "not exceed",
                    unit));
    for (const auto& row : rows) writer.sample(row.labels, row.estimate);
    writer.family(fmt::format("flowsketch_heavy_hitter_{}_lower", unit), "gauge",
                  fmt::format("Last complete interval: lower error bound of "
                              "flowsketch_heavy_hitter_{}: the true count lies in [lower, "
                              "estimate] with probability at least 1 - delta",
                              unit));
    for (const auto& row : rows) writer.sample(row.labels, row.lower);
    writer.family(fmt::format("flowsketch_heavy_hitter_{}_rank", unit), "gauge",
                  fmt::format("Last complete interval: the key's rank by {} (1 = largest); 0 if "
                              "it left the top and is kept for the staleness period",
                              unit));
    for (const auto& row : rows) writer.sample(row.labels, std::uint64_t{row.rank});
}

}  // namespace

std::string escape_label_value(std::string_view value) {
    std::string text;
    text.reserve(value.size());
    for (const char ch : value) {
        switch (ch) {
            case '\\':
                text += "\\\\";
                break;
            case '"':
                text += "\\\"";
                break;
            case '\n':
                text += "\\n";
                break;
            default:
                text.push_back(ch);
        }
    }
    return text;
}

PrometheusExposition::PrometheusExposition(const ExpositionOptions& options) : options_(options) {
    if (options.max_heavy_hitters > max_exported_heavy_hitters) {
        throw std::invalid_argument(fmt::format("at most {} heavy hitters can be exported, not {}",
                                                max_exported_heavy_hitters,
                                                options.max_heavy_hitters));
    }
    if (options.heavy_hitter_series_cap < 1 ||
        options.heavy_hitter_series_cap > max_heavy_hitter_series_cap) {
        throw std::invalid_argument(
            fmt::format("the heavy-hitter series cap must be 1 to {}, not {}",
                        max_heavy_hitter_series_cap, options.heavy_hitter_series_cap));
    }
}

void PrometheusExposition::observe(const Report& report) {
    // A final report carries the run's totals; adding only what exceeds the
    // counters keeps them monotone and counts nothing twice (see the header).
    const bool is_final = report.kind == ReportKind::final_report;
    auto add = [is_final](auto& counter, auto value) {
        if (!(value > 0)) return;  // estimates may come out below zero (or NaN): never subtract
        if (!is_final) {
            counter += value;
        } else if (value > counter) {
            counter = value;
        }
    };
    add(totals_.frames, report.frames);
    add(totals_.packets, report.packets);
    add(totals_.bytes, report.bytes);
    for (const auto& skip : report.skipped) add(totals_.skipped[skip.name], skip.count);
    for (const auto& tunnel : report.tunnels.inner) add(totals_.tunnels[tunnel.name], tunnel.count);
    for (const auto& reason : report.tunnels.outer_keyed) add(totals_.tunnels_outer_keyed[reason.name], reason.count);
    if (report.has_flows) {
        totals_.has_flows = true;
        const core::FlowCounts& flows = report.flows.counts;
        add(totals_.flows_new, flows.new_flows);
        add(totals_.flows_new_undercount_bound, flows.new_undercount_bound);
        add(totals_.flows_expired, flows.expired);
        add(totals_.flows_expired_variance, flows.expired_stderr * flows.expired_stderr);
        add(totals_.flows_ended, flows.ended);
        add(totals_.flows_ended_undercount_bound, flows.ended_undercount_bound);
    }
    for (const auto& interface : report.interfaces) {
        InterfaceTotals& totals = interfaces_[interface.name];
        add(totals.frames, interface.frames);
        add(totals.received, interface.received);
        add(totals.dropped, interface.dropped);
        add(totals.if_dropped, interface.if_dropped);
    }
    for (const auto& interface : report.file_interfaces) {
        add(file_interface_frames_[{interface.file, interface.name}], interface.frames);
    }

    // The gauges take a complete interval; else, until there is one, what
    // there is: a partial interval, or the whole run of --interval 0.
    bool describe = false;
    if (report.has_clickhouse) {  // cumulative: the largest seen keeps them monotone
        has_clickhouse_ = true;
        clickhouse_.delivered = std::max(clickhouse_.delivered, report.clickhouse.delivered);
        clickhouse_.undelivered = std::max(clickhouse_.undelivered, report.clickhouse.undelivered);
        clickhouse_.spilled = std::max(clickhouse_.spilled, report.clickhouse.spilled);
        clickhouse_.retries = std::max(clickhouse_.retries, report.clickhouse.retries);
        clickhouse_.queued = report.clickhouse.queued;
    }

    if (is_final) {
        ++final_reports_;
        describe = interval_reports_ == 0;
        if (describe) gauges_complete_ = true;
    } else {
        ++interval_reports_;
        describe = !report.partial || !gauges_complete_;
        if (describe) gauges_complete_ = !report.partial;
    }
    if (!describe) return;
    gauges_ = report;
    std::vector<const core::TopList*> by_packets = {&report.top_packets};
    std::vector<const core::TopList*> by_bytes = {&report.top_bytes};
    for (const core::KeyTops& key : report.keys) {
        by_packets.push_back(&key.top_packets);
        by_bytes.push_back(&key.top_bytes);
    }
    by_packets_.observe(by_packets);
    by_bytes_.observe(by_bytes);
}

std::string PrometheusExposition::render() const {
    std::string text;
    text.reserve(4096);
    FamilyWriter writer(text, gauges_ ? std::string_view(gauges_->probe) : std::string_view());

    writer.family("flowsketch_frames_total", "counter",
                  "Whole run: frames read (after the BPF filter), keyed or not");
    writer.sample("", totals_.frames);
    writer.family("flowsketch_packets_total", "counter",
                  "Whole run: IP packets keyed to a flow; exact");
    writer.sample("", totals_.packets);
    writer.family("flowsketch_bytes_total", "counter",
                  "Whole run: on-wire bytes of the IP packets keyed to a flow; exact");
    writer.sample("", totals_.bytes);
    if (!totals_.skipped.empty()) {
        writer.family("flowsketch_skipped_frames_total", "counter",
                      "Whole run: frames not keyed to a flow, by reason");
        for (const auto& [reason, count] : totals_.skipped) {
            writer.sample(render_labels({{"reason", reason}}), count);
        }
    }
    if (!totals_.tunnels.empty()) {
        writer.family("flowsketch_tunnelled_frames_total", "counter",
                      "Whole run: frames keyed by an inner flow, by tunnel type crossed");
        for (const auto& [type, count] : totals_.tunnels) writer.sample(render_labels({{"type", type}}), count);
        writer.family("flowsketch_tunnel_outer_keyed_frames_total", "counter",
                      "Whole run: frames keyed by the header that carried a tunnel, as its inner packet could not be "
                      "keyed, by reason");
        for (const auto& [reason, count] : totals_.tunnels_outer_keyed) {
            writer.sample(render_labels({{"reason", reason}}), count);
        }
    }
    writer.family("flowsketch_reports_total", "counter", "Whole run: reports completed, by kind");
    writer.sample(render_labels({{"kind", "interval"}}), interval_reports_);
    writer.sample(render_labels({{"kind", "final"}}), final_reports_);

    if (totals_.has_flows) {
        writer.family("flowsketch_flows_new_total", "counter",
                      "Whole run: flows seen for the first time (or again after expiring); may "
                      "undercount by the seen filter's false positives");
        writer.sample("", totals_.flows_new);
        writer.family("flowsketch_flows_new_undercount_bound_total", "counter",
                      "Whole run: new flows the seen filter may have missed (the sum of each "
                      "interval's bound, each holding with probability 0.999); the run's new "
                      "flows lie in [new_total, new_total + this]");
        writer.sample("", totals_.flows_new_undercount_bound);
        writer.family("flowsketch_flows_expired_total", "counter",
                      "Whole run: flows idle for the idle timeout (an estimate; see "
                      "docs/flow-lifecycle.md)");
        writer.sample("", totals_.flows_expired);
        writer.family("flowsketch_flows_expired_variance_total", "counter",
                      "Whole run: variance of flowsketch_flows_expired_total (the sum of the "
                      "intervals'); its square root is the standard error");
        writer.sample("", totals_.flows_expired_variance);
        writer.family("flowsketch_flows_ended_total", "counter",
                      "Whole run: TCP flows ended by FIN or RST; may undercount");
        writer.sample("", totals_.flows_ended);
        writer.family("flowsketch_flows_ended_undercount_bound_total", "counter",
                      "Whole run: ended flows that may have been missed (the sum of each "
                      "interval's bound); the run's ended flows lie in [ended_total, "
                      "ended_total + this]");
        writer.sample("", totals_.flows_ended_undercount_bound);
    }
    // Live capture: one series per interface named on the command line.
    auto interface_family = [&](std::string_view name, std::string_view help,
                                std::uint64_t InterfaceTotals::*field) {
        if (interfaces_.empty()) return;
        writer.family(name, "counter", help);
        for (const auto& [interface, totals] : interfaces_) {
            writer.sample(render_labels({{"interface", interface}}), totals.*field);
        }
    };
    // Live interfaces, then the interfaces of replayed pcapng files (with their file).
    if (!interfaces_.empty() || !file_interface_frames_.empty()) {
        writer.family("flowsketch_interface_frames_total", "counter",
                      "Whole run: frames flowsketch read from the interface (after the filter)");
        for (const auto& [interface, totals] : interfaces_) {
            writer.sample(render_labels({{"interface", interface}}), totals.frames);
        }
        for (const auto& [file_and_name, frames] : file_interface_frames_) {
            writer.sample(render_labels({{"interface", file_and_name.second}, {"file", file_and_name.first}}), frames);
        }
    }
    interface_family("flowsketch_interface_packets_received_total",
                     "Whole run: packets the capture received on the interface (libpcap ps_recv)",
                     &InterfaceTotals::received);
    interface_family(
        "flowsketch_interface_packets_dropped_total",
        "Whole run: packets the kernel dropped for lack of buffer space (libpcap ps_drop)",
        &InterfaceTotals::dropped);
    interface_family("flowsketch_interface_packets_if_dropped_total",
                     "Whole run: packets the interface or driver dropped (libpcap ps_ifdrop)",
                     &InterfaceTotals::if_dropped);

    if (has_clickhouse_) {
        writer.family("flowsketch_clickhouse_delivered_intervals_total", "counter",
                      "Windows exported whole to ClickHouse (--clickhouse)");
        writer.sample("", clickhouse_.delivered);
        writer.family("flowsketch_clickhouse_undelivered_intervals_total", "counter",
                      "Windows ClickHouse did not get: pushed out of the full queue or left at the end");
        writer.sample("", clickhouse_.undelivered);
        writer.family("flowsketch_clickhouse_spilled_intervals_total", "counter",
                      "Undelivered windows written to the spill directory as snapshots");
        writer.sample("", clickhouse_.spilled);
        writer.family("flowsketch_clickhouse_retries_total", "counter",
                      "Failed ClickHouse delivery attempts, each retried after a backoff");
        writer.sample("", clickhouse_.retries);
        writer.family("flowsketch_clickhouse_queued_intervals", "gauge",
                      "Windows waiting for delivery to ClickHouse at the last report");
        writer.sample("", clickhouse_.queued);
    }

    if (!gauges_) return text;  // no completed report yet: nothing to describe
    const Report& last = *gauges_;
    const SketchDescription& sketch = last.sketch;

    writer.family(
        "flowsketch_sketch_info", "gauge",
        "Configuration: Count-Min sketch parameters (constant 1; the parameters are the labels)");
    writer.sample(render_labels({
                      {"variant", sketch.variant},
                      {"epsilon", format_double(sketch.epsilon)},
                      {"delta", format_double(sketch.delta)},
                      {"width", std::to_string(sketch.width)},
                      {"depth", std::to_string(sketch.depth)},
                      {"conservative", sketch.conservative_update ? "true" : "false"},
                  }),
                  std::uint64_t{1});
    writer.family("flowsketch_sketch_epsilon", "gauge",
                  "Configuration: Count-Min additive error factor: lower = estimate - epsilon * N");
    writer.sample("", sketch.epsilon);
    writer.family("flowsketch_sketch_delta", "gauge",
                  "Configuration: probability that a true count lies below its lower bound");
    writer.sample("", sketch.delta);
    writer.family("flowsketch_sketch_width", "gauge", "Configuration: Count-Min counters per row");
    writer.sample("", std::uint64_t{sketch.width});
    writer.family("flowsketch_sketch_depth", "gauge", "Configuration: Count-Min rows");
    writer.sample("", std::uint64_t{sketch.depth});
    writer.family("flowsketch_memory_bytes", "gauge",
                  "Configuration: memory of the whole measurement state");
    writer.sample("", sketch.memory_bytes);

    writer.family("flowsketch_report_start_timestamp_seconds", "gauge",
                  "Last complete interval: its start (Unix seconds)");
    writer.sample("", last.start);
    writer.family("flowsketch_report_complete", "gauge",
                  "1 if the gauges describe a complete interval (or, with --interval 0, the whole "
                  "run); 0 while the run's first interval was cut short by its end");
    writer.sample("", std::uint64_t{gauges_complete_ ? 1U : 0U});
    writer.family("flowsketch_report_end_timestamp_seconds", "gauge",
                  "Last complete interval: its end (Unix seconds)");
    writer.sample("", last.end);
    writer.family("flowsketch_report_packets", "gauge",
                  "Last complete interval: IP packets (N of the heavy hitters' error bound)");
    writer.sample("", last.packets);
    writer.family("flowsketch_report_bytes", "gauge",
                  "Last complete interval: bytes (N of the heavy hitters' error bound)");
    writer.sample("", last.bytes);
    writer.family("flowsketch_input_truncated", "gauge",
                  "1 if an input ended early or was damaged (counts cover what was read)");
    writer.sample("", std::uint64_t{last.truncated ? 1U : 0U});
    writer.family("flowsketch_counts_are_lower_bounds", "gauge",
                  "Last complete interval: 1 if frames were dropped before flowsketch saw them "
                  "(counts are lower bounds)");
    writer.sample("", std::uint64_t{last.counts_are_lower_bounds ? 1U : 0U});

    if (last.has_flows) {
        const core::FlowCounts& flows = last.flows.counts;
        writer.family("flowsketch_flows_active", "gauge",
                      "Last complete interval: flows active at its end (an estimate)");
        writer.sample("", flows.active);
        writer.family("flowsketch_flows_active_lower", "gauge",
                      "Last complete interval: lower bound of flowsketch_flows_active");
        writer.sample("", flows.active_lower);
        writer.family("flowsketch_flows_active_upper", "gauge",
                      "Last complete interval: upper bound of flowsketch_flows_active");
        writer.sample("", flows.active_upper);
        writer.family("flowsketch_interval_flows_new", "gauge",
                      "Last complete interval: flows seen for the first time; never above the "
                      "truth");
        writer.sample("", flows.new_flows);
        writer.family("flowsketch_interval_flows_new_upper", "gauge",
                      "Last complete interval: upper bound of flowsketch_interval_flows_new "
                      "(holds with probability 0.999)");
        writer.sample(
            "", static_cast<double>(flows.new_flows) + whole_bound(flows.new_undercount_bound));
        writer.family("flowsketch_interval_flows_expired", "gauge",
                      "Last complete interval: flows whose idle timeout ran out (an estimate)");
        writer.sample("", flows.expired);
        writer.family("flowsketch_interval_flows_expired_lower", "gauge",
                      "Last complete interval: flowsketch_interval_flows_expired minus 3 standard "
                      "errors, at least 0");
        writer.sample("", std::max(0.0, flows.expired - 3 * flows.expired_stderr));
        writer.family("flowsketch_interval_flows_expired_upper", "gauge",
                      "Last complete interval: flowsketch_interval_flows_expired plus 3 standard "
                      "errors");
        writer.sample("", flows.expired + 3 * flows.expired_stderr);
        writer.family("flowsketch_interval_flows_ended", "gauge",
                      "Last complete interval: distinct TCP flows that sent FIN or RST; never "
                      "above the truth");
        writer.sample("", flows.ended);
        writer.family("flowsketch_interval_flows_ended_upper", "gauge",
                      "Last complete interval: upper bound of flowsketch_interval_flows_ended "
                      "(holds with probability 0.999)");
        writer.sample("",
                      static_cast<double>(flows.ended) + whole_bound(flows.ended_undercount_bound));
        writer.family("flowsketch_seen_filter_false_positive_rate", "gauge",
                      "Last complete interval: false-positive rate of the seen-flow filter at its "
                      "end (new flows it misses)");
        writer.sample("", flows.fpr);
        writer.family(
            "flowsketch_seen_filter_max_false_positive_rate", "gauge",
            "Last complete interval: highest false-positive rate of the seen-flow filter");
        writer.sample("", flows.max_fpr);
        writer.family("flowsketch_seen_filter_target_false_positive_rate", "gauge",
                      "Configuration: false-positive rate the seen-flow filter was sized for");
        writer.sample("", flows.target_fpr);
        writer.family(
            "flowsketch_seen_filter_overfilled", "gauge",
            "Last complete interval: 1 if more flows were active than the filter was sized for");
        writer.sample("", std::uint64_t{flows.overfilled ? 1U : 0U});
        writer.family(
            "flowsketch_flow_tracking_info", "gauge",
            "Configuration: flow lifecycle parameters (constant 1; the parameters are the labels)");
        writer.sample(render_labels({
                          {"seen_filter", last.flows.seen_filter},
                          {"generations", std::to_string(last.flows.generations)},
                          {"max_flows", std::to_string(last.flows.max_flows)},
                      }),
                      std::uint64_t{1});
        writer.family("flowsketch_flow_idle_timeout_seconds", "gauge",
                      "Configuration: a flow expires after this long without packets (seconds)");
        writer.sample("", last.flows.idle_timeout);
        writer.family("flowsketch_flow_tracking_memory_bytes", "gauge",
                      "Configuration: memory of the flow lifecycle's filters");
        writer.sample("", last.flows.memory_bytes);
    }

    render_heavy_hitters(writer, "packets", by_packets_.rows());
    render_heavy_hitters(writer, "bytes", by_bytes_.rows());
    return text;
}

}  // namespace flowsketch::reports
