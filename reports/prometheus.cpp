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

#include "reports/key_format.hpp"

namespace flowsketch::reports {
namespace {

using Out = std::back_insert_iterator<std::string>;

std::string format_double(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    return fmt::format("{}", value);  // shortest text that reads back exactly
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

// The rank, then the key's fields; the protocol by name, as people query it.
// An extra key spec's series carry its spec as `key` (the 5-tuple's carry none,
// as they always have).
std::string flow_labels(std::size_t rank, const core::HeavyHitter& flow, const core::KeySpec& spec) {
    std::vector<Label> labels;
    if (!spec.is_identity()) labels.push_back({"key", spec.name()});
    labels.push_back({"rank", std::to_string(rank)});
    for (KeyFieldText& field : key_fields(flow.key, spec)) {
        if (field.name == "proto") field.text = protocol_name(flow.key.protocol);
        labels.push_back({field.name, std::move(field.text)});
    }
    return render_labels(labels);
}

// Both families of one weight (estimate and lower bound), every list's
// series in each: the 5-tuple's, then each extra key spec's.
void render_heavy_hitters(FamilyWriter& writer, std::string_view unit, const std::vector<const core::TopList*>& lists,
                          std::size_t limit) {
    std::vector<std::pair<std::string, const core::HeavyHitter*>> series;
    for (const core::TopList* list : lists) {
        const std::size_t count = std::min(list->size(), limit);
        for (std::size_t i = 0; i < count; ++i) {
            series.emplace_back(flow_labels(i + 1, (*list)[i], list->spec), &(*list)[i]);
        }
    }
    if (series.empty()) return;
    writer.family(fmt::format("flowsketch_heavy_hitter_{}", unit), "gauge",
                  fmt::format("Count-Min estimate of the {} of the flow ranked `rank` in the last "
                              "completed interval; never below the true count",
                              unit));
    for (const auto& [labels, hitter] : series) writer.sample(labels, hitter->estimate);
    writer.family(fmt::format("flowsketch_heavy_hitter_{}_lower", unit), "gauge",
                  fmt::format("Lower error bound of flowsketch_heavy_hitter_{}: the true count "
                              "lies in [lower, estimate] with probability at least 1 - delta",
                              unit));
    for (const auto& [labels, hitter] : series) writer.sample(labels, hitter->lower);
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
    if (report.has_flows) {
        totals_.has_flows = true;
        add(totals_.flows_new, report.flows.counts.new_flows);
        add(totals_.flows_expired, report.flows.counts.expired);
        add(totals_.flows_ended, report.flows.counts.ended);
    }
    for (const auto& interface : report.interfaces) {
        InterfaceTotals& totals = interfaces_[interface.name];
        add(totals.frames, interface.frames);
        add(totals.received, interface.received);
        add(totals.dropped, interface.dropped);
        add(totals.if_dropped, interface.if_dropped);
    }

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
        if (interval_reports_ == 0) gauges_ = report;
    } else {
        ++interval_reports_;
        gauges_ = report;
    }
}

std::string PrometheusExposition::render() const {
    std::string text;
    text.reserve(4096);
    FamilyWriter writer(text, gauges_ ? std::string_view(gauges_->probe) : std::string_view());

    writer.family("flowsketch_frames_total", "counter",
                  "Frames read (after the BPF filter), keyed or not");
    writer.sample("", totals_.frames);
    writer.family("flowsketch_packets_total", "counter", "IP packets keyed to a flow; exact");
    writer.sample("", totals_.packets);
    writer.family("flowsketch_bytes_total", "counter",
                  "On-wire bytes of the IP packets keyed to a flow; exact");
    writer.sample("", totals_.bytes);
    if (!totals_.skipped.empty()) {
        writer.family("flowsketch_skipped_frames_total", "counter",
                      "Frames not keyed to a flow, by reason");
        for (const auto& [reason, count] : totals_.skipped) {
            writer.sample(render_labels({{"reason", reason}}), count);
        }
    }
    writer.family("flowsketch_reports_total", "counter", "Reports completed, by kind");
    writer.sample(render_labels({{"kind", "interval"}}), interval_reports_);
    writer.sample(render_labels({{"kind", "final"}}), final_reports_);

    if (totals_.has_flows) {
        writer.family("flowsketch_flows_new_total", "counter",
                      "Flows seen for the first time (or again after expiring); may undercount "
                      "by the seen filter's false positives");
        writer.sample("", totals_.flows_new);
        writer.family("flowsketch_flows_expired_total", "counter",
                      "Flows idle for the idle timeout (an estimate; see docs/flow-lifecycle.md)");
        writer.sample("", totals_.flows_expired);
        writer.family("flowsketch_flows_ended_total", "counter", "TCP flows ended by FIN or RST");
        writer.sample("", totals_.flows_ended);
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
    interface_family("flowsketch_interface_frames_total",
                     "Frames flowsketch read from the interface (after the filter)",
                     &InterfaceTotals::frames);
    interface_family("flowsketch_interface_packets_received_total",
                     "Packets the capture received on the interface (libpcap ps_recv)",
                     &InterfaceTotals::received);
    interface_family("flowsketch_interface_packets_dropped_total",
                     "Packets the kernel dropped for lack of buffer space (libpcap ps_drop)",
                     &InterfaceTotals::dropped);
    interface_family("flowsketch_interface_packets_if_dropped_total",
                     "Packets the interface or driver dropped (libpcap ps_ifdrop)",
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

    writer.family("flowsketch_sketch_info", "gauge",
                  "Count-Min sketch parameters (constant 1; the parameters are the labels)");
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
                  "Count-Min additive error factor: lower = estimate - epsilon * N");
    writer.sample("", sketch.epsilon);
    writer.family("flowsketch_sketch_delta", "gauge",
                  "Probability that a true count lies below its lower bound");
    writer.sample("", sketch.delta);
    writer.family("flowsketch_sketch_width", "gauge", "Count-Min counters per row");
    writer.sample("", std::uint64_t{sketch.width});
    writer.family("flowsketch_sketch_depth", "gauge", "Count-Min rows");
    writer.sample("", std::uint64_t{sketch.depth});
    writer.family("flowsketch_memory_bytes", "gauge",
                  "Memory of the whole measurement state, fixed by configuration");
    writer.sample("", sketch.memory_bytes);

    writer.family("flowsketch_report_start_timestamp_seconds", "gauge",
                  "Start of the window the gauges describe (Unix seconds)");
    writer.sample("", last.start);
    writer.family("flowsketch_report_end_timestamp_seconds", "gauge",
                  "End of the window the gauges describe (Unix seconds)");
    writer.sample("", last.end);
    writer.family("flowsketch_report_packets", "gauge",
                  "IP packets in the window the heavy hitters describe (N of its error bound)");
    writer.sample("", last.packets);
    writer.family("flowsketch_report_bytes", "gauge",
                  "Bytes in the window the heavy hitters describe (N of its error bound)");
    writer.sample("", last.bytes);
    writer.family("flowsketch_input_truncated", "gauge",
                  "1 if an input ended early or was damaged (counts cover what was read)");
    writer.sample("", std::uint64_t{last.truncated ? 1U : 0U});
    writer.family("flowsketch_counts_are_lower_bounds", "gauge",
                  "1 if frames were dropped before flowsketch saw them (counts are lower bounds)");
    writer.sample("", std::uint64_t{last.counts_are_lower_bounds ? 1U : 0U});

    if (last.has_flows) {
        const core::FlowCounts& flows = last.flows.counts;
        writer.family("flowsketch_flows_active", "gauge",
                      "Flows active at the end of the last interval (an estimate)");
        writer.sample("", flows.active);
        writer.family("flowsketch_flows_active_lower", "gauge",
                      "Lower bound of flowsketch_flows_active");
        writer.sample("", flows.active_lower);
        writer.family("flowsketch_flows_active_upper", "gauge",
                      "Upper bound of flowsketch_flows_active");
        writer.sample("", flows.active_upper);
        writer.family("flowsketch_seen_filter_false_positive_rate", "gauge",
                      "False-positive rate of the seen-flow filter now (new flows it misses)");
        writer.sample("", flows.fpr);
        writer.family("flowsketch_seen_filter_max_false_positive_rate", "gauge",
                      "Highest false-positive rate of the seen-flow filter in the last interval");
        writer.sample("", flows.max_fpr);
        writer.family("flowsketch_seen_filter_target_false_positive_rate", "gauge",
                      "False-positive rate the seen-flow filter was sized for");
        writer.sample("", flows.target_fpr);
        writer.family("flowsketch_seen_filter_overfilled", "gauge",
                      "1 if more flows were active than the filter was sized for");
        writer.sample("", std::uint64_t{flows.overfilled ? 1U : 0U});
        writer.family("flowsketch_flow_tracking_info", "gauge",
                      "Flow lifecycle parameters (constant 1; the parameters are the labels)");
        writer.sample(render_labels({
                          {"seen_filter", last.flows.seen_filter},
                          {"generations", std::to_string(last.flows.generations)},
                          {"max_flows", std::to_string(last.flows.max_flows)},
                      }),
                      std::uint64_t{1});
        writer.family("flowsketch_flow_idle_timeout_seconds", "gauge",
                      "A flow expires after this long without packets");
        writer.sample("", last.flows.idle_timeout);
        writer.family("flowsketch_flow_tracking_memory_bytes", "gauge",
                      "Memory of the flow lifecycle's filter");
        writer.sample("", last.flows.memory_bytes);
    }

    std::vector<const core::TopList*> by_packets = {&last.top_packets};
    std::vector<const core::TopList*> by_bytes = {&last.top_bytes};
    for (const core::KeyTops& key : last.keys) {
        by_packets.push_back(&key.top_packets);
        by_bytes.push_back(&key.top_bytes);
    }
    render_heavy_hitters(writer, "packets", by_packets, options_.max_heavy_hitters);
    render_heavy_hitters(writer, "bytes", by_bytes, options_.max_heavy_hitters);
    return text;
}

}  // namespace flowsketch::reports
