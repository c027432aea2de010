#include "src/pipeline.hpp"

#include <cmath>
#include <stdexcept>

namespace flowsketch::app {
namespace {

constexpr std::int64_t ns_per_second = 1'000'000'000;

double to_seconds(std::int64_t ns) { return static_cast<double>(ns) / 1e9; }

// Floor division: interval boundaries are multiples of the interval, also
// before 1970 (negative timestamps in damaged files).
std::int64_t floor_to_multiple(std::int64_t value, std::int64_t step) {
    std::int64_t q = value / step;
    if (value % step != 0 && value < 0) --q;
    return q * step;
}

std::int64_t interval_to_ns(double seconds) {
    if (!(seconds >= 0) || !std::isfinite(seconds) || seconds > 1e9) {
        throw std::invalid_argument("interval must be between 0 and 1e9 seconds");
    }
    return static_cast<std::int64_t>(std::llround(seconds * 1e9));
}

}  // namespace

void Pipeline::Counters::add(const Counters& other) noexcept {
    frames += other.frames;
    for (std::size_t i = 0; i < skipped.size(); ++i) skipped[i] += other.skipped[i];
}

Pipeline::Pipeline(const PipelineConfig& config, reports::ReportWriter& writer)
    : config_(config),
      writer_(writer),
      measurement_(config.measurement),
      limits_(config.limits),
      interval_ns_(interval_to_ns(config.interval_seconds)) {
    batch_.reserve(batch_capacity);
    if (interval_ns_ > 0 && interval_ns_ < 1000) {
        throw std::invalid_argument("interval must be at least one microsecond");
    }
}

// Intervals are aligned to multiples of the interval (as wall-clock reports
// are), so reports of several replays or probes line up.
void Pipeline::begin_at(std::int64_t timestamp_ns) noexcept {
    started_ = true;
    interval_start_ns_ = floor_to_multiple(timestamp_ns, interval_ns_);
    interval_end_ns_ = interval_start_ns_ + interval_ns_;
}

void Pipeline::flush_batch() noexcept {
    measurement_.add_batch(batch_);
    batch_.clear();
}

void Pipeline::close_interval(std::int64_t next_timestamp_ns) {
    flush_batch();
    writer_.write(make_report(reports::ReportKind::interval, measurement_.interval_summary(),
                              interval_, to_seconds(interval_start_ns_),
                              to_seconds(interval_end_ns_)));
    total_.add(interval_);
    interval_ = Counters{};
    measurement_.start_new_interval();
    // Empty intervals are not reported: a gap of years in a capture must not
    // print millions of empty reports. The next interval is the one holding
    // the next frame.
    begin_at(next_timestamp_ns);
}

void Pipeline::note_damage(const std::string& message) {
    truncated_ = true;
    warnings_.push_back(message);
}

void Pipeline::finish() {
    flush_batch();
    if (interval_ns_ > 0 && started_ && interval_.frames > 0) {
        writer_.write(make_report(reports::ReportKind::interval, measurement_.interval_summary(),
                                  interval_, to_seconds(interval_start_ns_),
                                  to_seconds(interval_end_ns_)));
    }
    total_.add(interval_);
    interval_ = Counters{};
    writer_.write(make_report(reports::ReportKind::final_report, measurement_.total_summary(),
                              total_, to_seconds(first_ns_), to_seconds(last_ns_)));
}

reports::Report Pipeline::make_report(reports::ReportKind kind, const core::WindowSummary& summary,
                                      const Counters& counters, double start, double end) const {
    reports::Report report;
    report.kind = kind;
    report.start = start;
    report.end = end;
    report.frames = counters.frames;
    report.packets = summary.packets;
    report.bytes = summary.bytes;
    for (std::size_t i = 1; i < capture::skip_reason_count; ++i) {
        report.skipped.push_back(reports::SkipCount{
            std::string(capture::skip_reason_name(static_cast<capture::SkipReason>(i))),
            counters.skipped[i]});
    }
    const core::CountMinParams& params = measurement_.sketch_params();
    report.sketch.variant = std::string(core::variant_name(params.variant));
    report.sketch.epsilon = params.epsilon();
    report.sketch.delta = params.delta();
    report.sketch.width = params.width;
    report.sketch.depth = params.depth;
    report.sketch.conservative_update = params.conservative_update;
    report.sketch.memory_bytes = measurement_.memory_bytes();
    report.top_packets = summary.top_packets;
    report.top_bytes = summary.top_bytes;
    report.truncated = truncated_;
    report.warnings = warnings_;
    return report;
}

}  // namespace flowsketch::app
