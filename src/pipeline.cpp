#include "src/pipeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace flowsketch::app {
namespace {


double to_seconds(std::int64_t ns) { return static_cast<double>(ns) / 1e9; }

std::string overfill_warning(const reports::FlowSection& flows) {
    char text[256];
    std::snprintf(text, sizeof text,
                  "seen filter overfilled: false-positive rate reached %.3g (target %.3g); more "
                  "than the planned %llu flows are active, so new flows are undercounted (see "
                  "new_undercount_bound); raise --max-flows",
                  flows.counts.max_fpr, flows.counts.target_fpr,
                  static_cast<unsigned long long>(flows.max_flows));
    return text;
}

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
    tunnels.add(other.tunnels);
    for (std::size_t i = 0; i < source_frames.size(); ++i) {
        source_frames[i] += other.source_frames[i];
        source_stats[i].received += other.source_stats[i].received;
        source_stats[i].dropped += other.source_stats[i].dropped;
        source_stats[i].if_dropped += other.source_stats[i].if_dropped;
        source_unfiltered[i] += other.source_unfiltered[i];
    }
}

void Pipeline::Counters::reset() noexcept {
    frames = 0;
    skipped.fill(0);
    tunnels = {};
    std::fill(source_frames.begin(), source_frames.end(), 0);
    std::fill(source_stats.begin(), source_stats.end(), capture::CaptureStats{});
    std::fill(source_unfiltered.begin(), source_unfiltered.end(), 0);
}

Pipeline::Pipeline(const PipelineConfig& config, reports::ReportWriter& writer)
    : config_(config),
      writer_(writer),
      measurement_(config.measurement),
      limits_(config.limits),
      interval_ns_(interval_to_ns(config.interval_seconds)) {
    if (config.threads < 1 || config.threads > 2) {
        throw std::invalid_argument("threads must be 1 or 2");
    }
    // A +vlan key spec needs the VLAN id in the key; otherwise it stays 0.
    limits_.outer_vlan = limits_.outer_vlan || measurement_.keys_vlan();
    // A `tunnel` or `+vni` key spec reads each packet's tunnel tag.
    tagged_ = measurement_.keys_tunnel();
    if (config.threads == 2) {
        batch_limit_ = threaded_batch_capacity;
        worker_ = std::make_unique<MeasurementWorker>(measurement_, limits_);
        deferred_.reserve(batch_limit_);
    }
    batch_.reserve(batch_limit_);
    if (tagged_) batch_tags_.reserve(batch_limit_);
    // Spares ready before the first window closes: none is made on this thread.
    if (config.snapshot_pool != nullptr) config.snapshot_pool->stock(measurement_.window_value_params());
    const std::size_t sources = config.interface_names.size();
    for (Counters* counters : {&interval_, &total_}) {
        counters->source_frames.assign(sources, 0);
        counters->source_stats.assign(sources, capture::CaptureStats{});
        counters->source_unfiltered.assign(sources, 0);
    }
    last_cumulative_.assign(sources, capture::CaptureStats{});
    if (interval_ns_ > 0 && interval_ns_ < 1000) {
        throw std::invalid_argument("interval must be at least one microsecond");
    }
    if (config.verify) {
        exact_ = std::make_unique<core::ExactCounter>(
            config.measurement.extra_keys, config.measurement.track_flows ? &config.measurement.lifecycle : nullptr,
            config.verify_max_flows, config.measurement.hash_seed);
    }
}

void Pipeline::count_exactly() {
    if (exact_->add_batch(batch_)) return;
    throw VerifyLimitExceeded(fmt::format(
        "--verify-max-flows {}: {} passed it; exact counting stops here, as a verification that "
        "stopped counting would compare against wrong truths (raise --verify-max-flows)",
        exact_->max_entries(), exact_->exceeded()));
}

void Pipeline::advance_to(std::int64_t timestamp_ns) {
    measurement_.advance_to(timestamp_ns);
    if (exact_) exact_->advance_to(timestamp_ns);
}

void Pipeline::start_new_interval() {
    measurement_.start_new_interval();
    if (exact_) exact_->start_new_interval();
}

reports::Report Pipeline::window_report(reports::ReportKind kind, core::Window window, const Counters& counters,
                                        double start, double end) {
    const core::WindowSummary summary = measurement_.summary(window);
    reports::Report report = make_report(kind, summary, counters, start, end);
    if (exact_) {
        report.has_verify = true;
        report.verify = core::verify_window(summary, exact_->window(window), report.sketch.epsilon,
                                            report.sketch.delta, config_.measurement.top_k);
        report.verify.memory_bytes = exact_->memory_bytes();
        report.verify.max_flows = exact_->max_entries();
        verify_verdict_.add(report.verify);
    }
    return report;
}

// Intervals are aligned to multiples of the interval (as wall-clock reports
// are), so reports of several replays or probes line up.
void Pipeline::begin_at(std::int64_t timestamp_ns) noexcept {
    started_ = true;
    interval_start_ns_ = floor_to_multiple(timestamp_ns, interval_ns_);
    // Saturate: sources clamp packet time to 2^62 ns, but the pipeline is
    // also driven directly (tests, fuzzing) with any 64-bit time.
    interval_end_ns_ = interval_start_ns_ > std::numeric_limits<std::int64_t>::max() - interval_ns_
                           ? std::numeric_limits<std::int64_t>::max()
                           : interval_start_ns_ + interval_ns_;
}

Pipeline::~Pipeline() = default;

// --threads 2 with frames whose bytes stay put: each batch is decoded by the
// worker unless the worker is behind when the batch starts (then here, as
// hashing is in flush_batch), so the two threads share the work by its load;
// while other work takes the cores, this thread measures alone.
void Pipeline::hand_over(std::span<const capture::Frame> frames, int link_type,
                         const std::shared_ptr<const void>& storage, std::size_t source) {
    for (const capture::Frame& frame : frames) {
        account(frame, source);
        if (batch_.empty() && deferred_.empty()) {
            alone_ = contention_.run_alone();
            defer_ = !alone_ && !worker_->behind();
        }
        if (!defer_) {
            decode(frame, link_type);
            continue;
        }
        // One link type per batch: a pcapng file's interfaces may differ
        // in it within one read block.
        if (!deferred_.empty() && deferred_link_ != link_type) flush_batch();
        if (deferred_storage_.empty() || deferred_storage_.back() != storage) {
            // A new block, or a new file: at most max_storage_per_batch per batch.
            if (!deferred_.empty() && deferred_storage_.size() == max_storage_per_batch) flush_batch();
            deferred_storage_.push_back(storage);
        }
        deferred_link_ = link_type;
        deferred_.push_back(frame);
        if (deferred_.size() == batch_limit_) flush_batch();
    }
}

void Pipeline::flush_batch() {
    if (!deferred_.empty()) {  // batch_ is empty: a batch is filled in one place
        MeasurementWorker::Batch batch = worker_->take_spare();
        batch.frames.swap(deferred_);  // deferred_ takes the spare's empty buffers
        batch.storage.swap(deferred_storage_);
        batch.link_type = deferred_link_;
        batch.hashed = false;
        deferred_.reserve(batch_limit_);
        worker_->submit(std::move(batch));
        return;
    }
    if (batch_.empty()) return;
    if (exact_) count_exactly();
    if (worker_) alone_ = contention_.run_alone();
    if (worker_ && !alone_) {
        MeasurementWorker::Batch batch = worker_->take_spare();
        batch.packets.swap(batch_);  // batch_ takes the spare's empty buffer
        batch.tags.swap(batch_tags_);
        batch_.reserve(batch_limit_);
        if (tagged_) batch_tags_.reserve(batch_limit_);
        // The worker hashes the batch itself unless it is the slower side.
        batch.hashed = worker_->behind();
        if (batch.hashed) {
            measurement_.prepare(batch.packets, batch.prepared);  // reads only fixed parameters
        }
        worker_->submit(std::move(batch));
        return;
    }
    // Alone with a worker: the batches it was handed go first.
    if (worker_) worker_->drain();
    measurement_.add_batch(batch_, batch_tags_);
    batch_.clear();
    batch_tags_.clear();
}

void Pipeline::sync() {
    flush_batch();
    if (!worker_) return;
    worker_->drain();
    worker_->take_skipped(interval_.skipped);  // frames the worker decoded
    worker_->take_tunnels(interval_.tunnels);
}

void Pipeline::close_interval(std::int64_t next_timestamp_ns) {
    sync();
    advance_to(interval_end_ns_);
    emit(window_report(reports::ReportKind::interval, core::Window::interval, interval_,
                       to_seconds(interval_start_ns_), to_seconds(interval_end_ns_)));
    snapshot(core::Window::interval, interval_, interval_start_ns_, interval_end_ns_);
    total_.add(interval_);
    interval_.reset();
    start_new_interval();
    // Empty intervals are not reported: a gap of years in a capture must not
    // print millions of empty reports. The next interval is the one holding
    // the next frame.
    begin_at(next_timestamp_ns);
}

// Reports go to the writer; an overfilled seen filter is also said once on
// stderr when it starts (and again if it recovers and overfills again).
void Pipeline::emit(const reports::Report& report) {
    const bool overfilled = report.has_flows && report.flows.counts.overfilled;
    if (overfilled && !overfill_announced_) {
        std::fprintf(stderr, "flowsketch: warning: %s\n", overfill_warning(report.flows).c_str());
    }
    if (report.kind == reports::ReportKind::interval) overfill_announced_ = overfilled;
    writer_.write(report);
}

std::size_t Pipeline::add_file_interface(const reports::FileInterfaceReport& interface) {
    file_interfaces_.push_back(interface);
    for (Counters* counters : {&interval_, &total_}) {
        counters->source_frames.push_back(0);
        counters->source_stats.push_back(capture::CaptureStats{});
        counters->source_unfiltered.push_back(0);
    }
    return interval_.source_frames.size() - 1;
}

void Pipeline::set_file_interface_statistics(std::size_t source, std::optional<std::uint64_t> if_received,
                                             std::optional<std::uint64_t> if_dropped,
                                             std::optional<std::uint64_t> os_dropped) {
    const std::size_t i = source - config_.interface_names.size();
    if (source < config_.interface_names.size() || i >= file_interfaces_.size()) return;
    file_interfaces_[i].if_received = if_received;
    file_interfaces_[i].if_dropped = if_dropped;
    file_interfaces_[i].os_dropped = os_dropped;
}

void Pipeline::note_damage(const std::string& message) {
    truncated_ = true;
    warnings_.push_back(message);
}

void Pipeline::finish() {
    sync();
    if (seen_any_) advance_to(last_ns_);
    if (interval_ns_ > 0 && started_ && interval_.frames > 0) {
        reports::Report last = window_report(reports::ReportKind::interval, core::Window::interval, interval_,
                                             to_seconds(interval_start_ns_), to_seconds(interval_end_ns_));
        last.partial = true;  // the run ended inside it
        emit(last);
        snapshot(core::Window::interval, interval_, interval_start_ns_, interval_end_ns_);
    }
    total_.add(interval_);
    interval_.reset();
    emit(window_report(reports::ReportKind::final_report, core::Window::run, total_, to_seconds(first_ns_),
                       to_seconds(last_ns_)));
    // Without intervals the run is the one window; with them, it is their merge.
    if (interval_ns_ == 0 && seen_any_) snapshot(core::Window::run, total_, first_ns_, last_ns_);
}

void Pipeline::set_capture_stats(const std::vector<capture::CaptureStats>& cumulative) {
    for (std::size_t i = 0; i < cumulative.size() && i < last_cumulative_.size(); ++i) {
        auto& share = interval_.source_stats[i];
        share.received += cumulative[i].received - last_cumulative_[i].received;
        share.dropped += cumulative[i].dropped - last_cumulative_[i].dropped;
        share.if_dropped += cumulative[i].if_dropped - last_cumulative_[i].if_dropped;
        last_cumulative_[i] = cumulative[i];
    }
}

void Pipeline::close_interval_at(std::int64_t start_ns, std::int64_t end_ns, bool partial) {
    sync();
    advance_to(end_ns);
    reports::Report report = window_report(reports::ReportKind::interval, core::Window::interval, interval_,
                                           to_seconds(start_ns), to_seconds(end_ns));
    report.partial = partial;
    emit(report);
    snapshot(core::Window::interval, interval_, start_ns, end_ns);
    total_.add(interval_);
    interval_.reset();
    start_new_interval();
}

void Pipeline::finish_at(std::int64_t interval_start_ns, std::int64_t run_start_ns,
                         std::int64_t end_ns) {
    if (interval_ns_ > 0) {
        close_interval_at(interval_start_ns, end_ns, true);  // stopped inside the interval
    } else {
        sync();
        advance_to(end_ns);
        total_.add(interval_);
        interval_.reset();
    }
    emit(window_report(reports::ReportKind::final_report, core::Window::run, total_, to_seconds(run_start_ns),
                       to_seconds(end_ns)));
    if (interval_ns_ == 0) snapshot(core::Window::run, total_, run_start_ns, end_ns);
}

reports::Snapshot Pipeline::recycled_snapshot() const {
    return config_.snapshot_pool != nullptr ? config_.snapshot_pool->take() : reports::Snapshot{};
}

void Pipeline::snapshot(core::Window window, const Counters& counters, std::int64_t start_ns,
                        std::int64_t end_ns) {
    if (config_.snapshots == nullptr && config_.clickhouse == nullptr) return;
    reports::Snapshot snapshot = recycled_snapshot();
    core::WindowValue& value = snapshot.value;
    value = measurement_.window_value(window, std::move(value));
    value.start_ns = start_ns;
    value.end_ns = end_ns;
    value.frames = counters.frames;
    for (std::size_t i = 1; i < capture::skip_reason_count; ++i) {
        value.skipped.push_back(core::NamedCount{
            std::string(capture::skip_reason_name(static_cast<capture::SkipReason>(i))), counters.skipped[i]});
    }
    for (std::size_t i = 0; i < config_.interface_names.size(); ++i) {
        const auto& stats = counters.source_stats[i];
        value.interfaces.push_back(core::InterfaceCounts{config_.interface_names[i], counters.source_frames[i],
                                                         stats.received, stats.dropped, stats.if_dropped});
    }
    reports::SnapshotContext& context = snapshot.context;
    context = reports::SnapshotContext{};
    context.probe = config_.probe;
    context.memory_bytes = measurement_.memory_bytes();
    const std::vector<core::Aggregation>& aggregations = measurement_.aggregations();
    for (std::size_t k = 1; k < aggregations.size(); ++k) {  // as the reports count a spec's state
        context.key_memory_bytes.push_back(sizeof(core::Aggregation) + aggregations[k].memory_bytes());
    }
    if (const core::FlowLifecycle* lifecycle = measurement_.lifecycle()) {
        context.flows.seen_filter = std::string(core::seen_filter_kind_name(lifecycle->config().kind));
        context.flows.idle_timeout = to_seconds(lifecycle->config().idle_timeout_ns);
        context.flows.generations = lifecycle->config().generations;
        context.flows.max_flows = lifecycle->config().max_flows;
        context.flows.memory_bytes = lifecycle->memory_bytes();
    }
    context.truncated = truncated_;
    context.warnings = warnings_;
    if (config_.clickhouse != nullptr) {
        if (config_.snapshots == nullptr) {
            config_.clickhouse->submit(std::move(snapshot));
            return;
        }
        // Both sinks: the copy fills a recycled snapshot's storage too.
        reports::Snapshot copy = recycled_snapshot();
        copy = snapshot;
        config_.clickhouse->submit(std::move(copy));
    }
    config_.snapshots->submit(std::move(snapshot));
}

reports::Report Pipeline::make_report(reports::ReportKind kind, const core::WindowSummary& summary,
                                      const Counters& counters, double start, double end) const {
    reports::Report report;
    report.kind = kind;
    report.probe = config_.probe;
    report.seed = config_.measurement.hash_seed;
    if (config_.clickhouse != nullptr) {
        report.has_clickhouse = true;
        report.clickhouse = config_.clickhouse->counts();
    }
    report.start = start;
    report.end = end;
    report.frames = counters.frames;
    report.packets = summary.packets;
    report.bytes = summary.bytes;
    for (std::size_t i = 1; i < capture::skip_reason_count; ++i) {
        report.skipped.push_back(core::NamedCount{
            std::string(capture::skip_reason_name(static_cast<capture::SkipReason>(i))), counters.skipped[i]});
    }
    // Only a window that met a tunnel lists them: other reports stay as they were.
    if (!counters.tunnels.empty()) {
        for (std::size_t i = 0; i < capture::tunnel_type_count; ++i) {
            report.tunnels.inner.push_back(core::NamedCount{
                std::string(capture::tunnel_type_name(static_cast<capture::TunnelType>(i))),
                counters.tunnels.inner[i]});
        }
        for (std::size_t i = 1; i < capture::inner_reason_count; ++i) {
            if (i == static_cast<std::size_t>(capture::SkipReason::unsupported_link_type)) continue;
            report.tunnels.outer_keyed.push_back(core::NamedCount{
                std::string(capture::skip_reason_name(static_cast<capture::SkipReason>(i))),
                counters.tunnels.outer_keyed[i]});
        }
    }
    report.sketch = reports::describe_sketch(measurement_.sketch_params(), measurement_.memory_bytes());
    report.top_packets = summary.top_packets;
    report.top_bytes = summary.top_bytes;
    report.changes_packets = summary.changes_packets;
    report.changes_bytes = summary.changes_bytes;
    report.keys = summary.keys;
    report.has_distinct_totals = summary.has_distinct_totals;
    report.distinct_totals = summary.distinct_totals;
    if (summary.has_flows) {
        const core::FlowLifecycle& lifecycle = *measurement_.lifecycle();
        report.has_flows = true;
        report.flows.counts = summary.flows;
        report.flows.seen_filter = std::string(core::seen_filter_kind_name(lifecycle.config().kind));
        report.flows.idle_timeout = to_seconds(lifecycle.config().idle_timeout_ns);
        report.flows.generations = lifecycle.config().generations;
        report.flows.max_flows = lifecycle.config().max_flows;
        report.flows.memory_bytes = lifecycle.memory_bytes();
    }
    for (std::size_t i = 0; i < config_.interface_names.size(); ++i) {
        const auto& stats = counters.source_stats[i];
        report.interfaces.push_back(core::InterfaceCounts{config_.interface_names[i], counters.source_frames[i],
                                                          stats.received, stats.dropped, stats.if_dropped});
        if (stats.dropped > 0 || stats.if_dropped > 0) report.counts_are_lower_bounds = true;
    }
    if (list_file_interfaces_) {
        for (std::size_t i = 0; i < file_interfaces_.size(); ++i) {
            const std::size_t slot = config_.interface_names.size() + i;
            reports::FileInterfaceReport interface = file_interfaces_[i];
            interface.frames = counters.source_frames[slot];
            interface.unsupported_link_type =
                capture::is_supported_link_type(interface.link_type) ? 0 : interface.frames;
            interface.unfiltered = counters.source_unfiltered[slot];
            report.file_interfaces.push_back(std::move(interface));
        }
    }
    // A replay that read no frame has no packet time to report.
    report.no_packet_time = config_.packet_time_intervals && !seen_any_;
    report.truncated = truncated_;
    report.warnings = warnings_;
    if (report.has_flows && report.flows.counts.overfilled) {
        report.warnings.push_back(overfill_warning(report.flows));
    }
    return report;
}

}  // namespace flowsketch::app
