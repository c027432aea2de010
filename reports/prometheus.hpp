// Prometheus text exposition (format 0.0.4) of a run's reports. The exposition
// folds each completed Report into run-long counters and last-interval gauges,
// and renders them as one scrape body (docs/prometheus.md lists every metric).
// Nothing here does I/O; src/metrics_server serves the rendered text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <optional>
#include <string>
#include <string_view>

#include "reports/heavy_hitter_series.hpp"
#include "reports/report.hpp"

namespace flowsketch::reports {

/// The CLI's cap on --top; the exposition enforces it again so the number of
/// series stays bounded whoever builds the reports.
inline constexpr std::size_t max_exported_heavy_hitters = 10000;
/// The largest cap on heavy-hitter series per family that can be asked for.
inline constexpr std::size_t max_heavy_hitter_series_cap = 100000;

struct ExpositionOptions {
    /// Heavy hitters exported per ranking (packets, bytes) and key spec from
    /// one report; at most max_exported_heavy_hitters.
    std::size_t max_heavy_hitters = max_exported_heavy_hitters;
    /// A key that left the top stays exported for this many further complete
    /// intervals (at its ranking's smallest exported estimate, lower bound 0,
    /// rank 0), then its series ends.
    std::uint32_t staleness_intervals = 3;
    /// Hard cap on the series of one heavy-hitter family (all key specs
    /// together); the last interval's top goes first, by rank, then the keys
    /// that left it most recently. 1 to max_heavy_hitter_series_cap.
    std::size_t heavy_hitter_series_cap = 1000;
};

class PrometheusExposition {
public:
    PrometheusExposition() = default;
    /// Throws std::invalid_argument if max_heavy_hitters or
    /// heavy_hitter_series_cap is out of range.
    explicit PrometheusExposition(const ExpositionOptions& options);

    /// Folds one completed report in.
    ///
    /// Counters (packets, bytes, frames, skipped by reason) are cumulative over
    /// the run: each interval report adds its counts. A final report repeats
    /// the run's totals, which the interval reports already counted, so it only
    /// adds what they did not (nothing when the run has intervals; everything
    /// with --interval 0, when the final report is the only one). Counters thus
    /// never go down and `flowsketch_packets_total` equals the sum of the run's
    /// interval reports.
    ///
    /// The flow lifecycle's new/expired/ended and the interfaces' frames and
    /// drops are counters too, summed the same way.
    ///
    /// Gauges (heavy hitters, active flows, sketch parameters, window
    /// timestamps) describe the last complete interval. An interval cut short
    /// by the end of the run (Report::partial) adds to the counters but does
    /// not replace them, unless no complete interval was seen; a final report
    /// replaces them only if no interval report was seen (its window is the
    /// whole run, not an interval).
    ///
    /// Heavy-hitter series are labelled by key, not by rank: a key keeps its
    /// series while it is in the top of some interval of the last
    /// `staleness_intervals` + 1, within `heavy_hitter_series_cap`.
    void observe(const Report& report);

    /// The whole scrape body in text format 0.0.4 (ends with a newline).
    std::string render() const;

    std::uint64_t reports_observed() const noexcept { return interval_reports_ + final_reports_; }

private:
    // The ClickHouse export's counters (cumulative in each report already).
    bool has_clickhouse_ = false;
    ClickHouseExportCounts clickhouse_;

    struct Totals {
        std::uint64_t frames = 0;
        std::uint64_t packets = 0;
        std::uint64_t bytes = 0;
        std::map<std::string, std::uint64_t> skipped;  // sorted: a stable output order
        std::map<std::string, std::uint64_t> tunnels;  // by type; empty until a report met a tunnel
        std::map<std::string, std::uint64_t> tunnels_outer_keyed;  // by reason, likewise
        bool has_flows = false;                        // some report carried the flow lifecycle
        std::uint64_t flows_new = 0;
        double flows_new_undercount_bound = 0;  // sums of per-interval bounds
        double flows_expired = 0;               // a sum of estimates, hence not an integer
        double flows_expired_variance = 0;
        std::uint64_t flows_ended = 0;
        double flows_ended_undercount_bound = 0;
    };
    struct InterfaceTotals {
        std::uint64_t frames = 0;
        std::uint64_t received = 0;
        std::uint64_t dropped = 0;
        std::uint64_t if_dropped = 0;
    };

    ExpositionOptions options_;
    Totals totals_;
    std::map<std::string, InterfaceTotals> interfaces_;  // by name; live capture only
    // Replays of multi-interface pcapng files: frames per (file, interface name).
    std::map<std::pair<std::string, std::string>, std::uint64_t> file_interface_frames_;
    std::uint64_t interval_reports_ = 0;
    std::uint64_t final_reports_ = 0;
    bool gauges_complete_ = false;  // gauges_ is a complete interval (or the whole run)
    std::optional<Report> gauges_;  // the report the gauges describe
    // The heavy-hitter series of each ranking.
    HeavyHitterSeries by_packets_{options_.max_heavy_hitters, options_.staleness_intervals,
                                  options_.heavy_hitter_series_cap};
    HeavyHitterSeries by_bytes_{options_.max_heavy_hitters, options_.staleness_intervals,
                                options_.heavy_hitter_series_cap};
};

/// Escapes a label value for the text format: backslash, double quote, newline.
std::string escape_label_value(std::string_view value);

/// Content-Type of render()'s output.
inline constexpr std::string_view exposition_content_type =
    "text/plain; version=0.0.4; charset=utf-8";

}  // namespace flowsketch::reports
