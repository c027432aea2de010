// The measurement pipeline: frames → decoder → batches of keyed packets →
// FlowMeasurement, with interval boundaries in packet time and the Report
// assembled at each boundary.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "capture/decode/decode.hpp"
#include "capture/file/pcap_file_source.hpp"
#include "capture/live/pcap_live_source.hpp"
#include "core/measure/flow_measurement.hpp"
#include "core/verify/exact_counter.hpp"
#include "reports/report.hpp"
#include "reports/report_writer.hpp"
#include "src/core_contention.hpp"
#include "src/measurement_worker.hpp"
#include "src/sinks/clickhouse_exporter.hpp"
#include "src/sinks/snapshot_pool.hpp"
#include "src/sinks/snapshot_writer.hpp"

namespace flowsketch::app {

struct PipelineConfig {
    core::MeasurementConfig measurement;
    double interval_seconds = 10.0;  // 0 = only the final report
    /// true: intervals follow packet timestamps (replays). false: the caller
    /// closes intervals (live capture, on a wall-clock timer).
    bool packet_time_intervals = true;
    /// Live capture: one name per source; frames and drops are reported per
    /// interface. Empty for replays.
    std::vector<std::string> interface_names;
    capture::DecodeLimits limits;
    /// 1: everything on the calling thread. 2: the sketches are updated on a
    /// second thread (same reports; see MeasurementWorker).
    unsigned threads = 1;
    /// --probe: the name every report and snapshot carries.
    std::string probe;
    /// --snapshot-dir: where each closed window's snapshot goes (none if null).
    SnapshotWriter* snapshots = nullptr;
    /// --verify: count every key exactly beside the sketches and check each
    /// report against the counts; each exact table holds at most
    /// verify_max_flows entries.
    bool verify = false;
    std::uint64_t verify_max_flows = 10'000'000;
    /// --clickhouse: where each closed window is exported (none if null).
    ClickHouseExporter* clickhouse = nullptr;
    /// Snapshots the sinks above give back, filled again for the next window
    /// (none if null: each window's snapshot is allocated anew).
    SnapshotPool* snapshot_pool = nullptr;
};

/// An exact table of --verify passed its limit: the run stops, since a
/// verification that stopped counting would compare against wrong truths.
class VerifyLimitExceeded : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class Pipeline {
public:
    /// Throws std::invalid_argument on bad measurement parameters.
    Pipeline(const PipelineConfig& config, reports::ReportWriter& writer);
    ~Pipeline();
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;

    /// Handles one frame of the given link type (packet time from the frame)
    /// read from source `source` (an index into interface_names, 0 for files).
    void on_frame(const capture::Frame& frame, int link_type, std::size_t source = 0) {
        if (!deferred_.empty()) flush_batch();  // frames handed over earlier go first
        account(frame, source);
        decode(frame, link_type);
    }

    /// No interface counts the frames (on_frames' `source`).
    static constexpr std::size_t no_interface = SIZE_MAX;

    /// on_frame for each frame in order (a file's batch: one link type, from
    /// one file interface, `source`, of add_file_interface).
    /// `storage` (PcapFileSource::frame_storage) keeps the frames' bytes where
    /// they are: with it, `--threads 2` may leave their decoding to the worker.
    void on_frames(std::span<const capture::Frame> frames, int link_type,
                   const std::shared_ptr<const void>& storage = nullptr,
                   std::size_t source = no_interface) {
        // --verify counts the records on this thread: they are decoded here.
        if (worker_ && storage && !exact_) {
            hand_over(frames, link_type, storage, source);
            return;
        }
        if (!deferred_.empty()) flush_batch();  // once, not per frame
        if (tagged_) {
            decode_all<true>(frames, link_type, source);
        } else {
            decode_all<false>(frames, link_type, source);
        }
    }

    /// Replays: an interface of a pcapng file, counted from now on as the
    /// returned `source` of on_frames. Reports list them once
    /// list_file_interfaces() was called (a file has several).
    std::size_t add_file_interface(const reports::FileInterfaceReport& interface);
    void list_file_interfaces() noexcept { list_file_interfaces_ = true; }
    /// The counters a file interface's Interface Statistics Blocks gave so
    /// far (the last block's), shown in the reports from now on.
    void set_file_interface_statistics(std::size_t source, std::optional<std::uint64_t> if_received,
                                       std::optional<std::uint64_t> if_dropped,
                                       std::optional<std::uint64_t> os_dropped);
    /// Frames of a file interface not counted: the filter does not compile for its link type.
    void note_unfiltered(std::size_t source, std::uint64_t frames) {
        interval_.source_unfiltered[source] += frames;
    }

    /// Records that an input was cut short or damaged; shown in the next reports.
    void note_damage(const std::string& message);
    /// A problem with the input that did not end it; shown in the next reports.
    void note_warning(const std::string& message) { warnings_.push_back(message); }

    /// Live capture: the sources' cumulative libpcap counters, read just
    /// before an interval is closed (the report shows the interval's share).
    void set_capture_stats(const std::vector<capture::CaptureStats>& cumulative);

    /// Live capture: closes the interval [start_ns, end_ns) (wall clock) and
    /// reports it, even when it saw no packets (a live probe reports silence).
    /// `partial`: the run stops inside it (Report::partial).
    void close_interval_at(std::int64_t start_ns, std::int64_t end_ns, bool partial = false);

    /// Emits the last interval (if intervals are on) and the final report.
    /// Live capture passes the wall-clock span of the last, partial interval
    /// and of the whole run; replays use packet time.
    void finish();
    void finish_at(std::int64_t interval_start_ns, std::int64_t run_start_ns, std::int64_t end_ns);

    std::uint64_t frames_total() const noexcept { return total_.frames + interval_.frames; }
    /// Frames skipped for `reason` so far (all of them after finish()).
    std::uint64_t skipped_total(capture::SkipReason reason) const noexcept {
        const auto i = static_cast<std::size_t>(reason);
        return total_.skipped[i] + interval_.skipped[i];
    }
    /// --verify: every report's checks so far, for the strict test.
    const core::VerifyVerdict& verify_verdict() const noexcept { return verify_verdict_; }

private:
    // Per hand-over to the measurement: one of its chunks; larger with a
    // worker thread, to pay for the queue's lock once per thousand packets.
    static constexpr std::size_t batch_capacity = core::FlowMeasurement::chunk_packets;
    static constexpr std::size_t threaded_batch_capacity = 2048;
    // A saturated interval end: the last interval, which never closes early.
    static constexpr std::int64_t last_boundary = INT64_MAX;

    struct Counters {
        std::uint64_t frames = 0;
        std::array<std::uint64_t, capture::skip_reason_count> skipped{};
        capture::TunnelCounts tunnels;
        std::vector<std::uint64_t> source_frames;        // per live or file interface
        std::vector<capture::CaptureStats> source_stats;  // libpcap counters' share
        std::vector<std::uint64_t> source_unfiltered;     // file interfaces: not filtered
        void add(const Counters& other) noexcept;
        void reset() noexcept;
    };

    // Blocks of frame storage one handed-over batch may hold (a batch is cut
    // at the third): bounds the read blocks the ring keeps alive.
    static constexpr std::size_t max_storage_per_batch = 2;

    // What every frame counts for, decoded or not: the interval it falls in
    // (closing the last one when it has passed) and the frame counters.
    void account(const capture::Frame& frame, std::size_t source) {
        if (interval_ns_ > 0 && config_.packet_time_intervals) {
            if (!started_) {
                begin_at(frame.timestamp_ns);
            } else if (frame.timestamp_ns >= interval_end_ns_ && interval_end_ns_ != last_boundary) {
                close_interval(frame.timestamp_ns);
            }
        }
        note_time(frame.timestamp_ns);
        ++interval_.frames;
        if (source < interval_.source_frames.size()) ++interval_.source_frames[source];
    }
    void decode(const capture::Frame& frame, int link_type) {
        if (tagged_) {
            decode_as<true>(frame, link_type);
        } else {
            decode_as<false>(frame, link_type);
        }
    }
    // Whether tunnel tags are kept is decided once per batch, not per frame:
    // the plain loop stays as small as the fast path needs.
    template <bool Tagged>
    void decode_as(const capture::Frame& frame, int link_type) {
        capture::SkipReason reason;
        if constexpr (Tagged) {
            reason = decode_into(batch_, batch_tags_, link_type, frame, limits_, interval_.tunnels);
        } else {
            reason = decode_into(batch_, link_type, frame, limits_, interval_.tunnels);
        }
        if (reason != capture::SkipReason::none) {
            ++interval_.skipped[static_cast<std::size_t>(reason)];
            return;
        }
        if (batch_.size() == batch_limit_) flush_batch();
    }
    template <bool Tagged>
    void decode_all(std::span<const capture::Frame> frames, int link_type, std::size_t source) {
        for (const capture::Frame& frame : frames) {
            account(frame, source);
            decode_as<Tagged>(frame, link_type);
        }
    }
    void hand_over(std::span<const capture::Frame> frames, int link_type,
                   const std::shared_ptr<const void>& storage, std::size_t source);
    void begin_at(std::int64_t timestamp_ns) noexcept;
    void note_time(std::int64_t timestamp_ns) noexcept {
        if (!seen_any_) {
            first_ns_ = last_ns_ = timestamp_ns;
            seen_any_ = true;
        }
        // Unconditional stores, so no branch: at 10 Mpps many packets share a
        // microsecond, and which one moves the clock follows no pattern a
        // branch predictor learns.
        last_ns_ = std::max(last_ns_, timestamp_ns);
        first_ns_ = std::min(first_ns_, timestamp_ns);
    }
    void close_interval(std::int64_t next_timestamp_ns);
    void flush_batch();
    /// Every packet so far is in the measurement (call before reading it).
    void sync();
    void emit(const reports::Report& report);
    /// Hands the window's value to the snapshot writer (if any); after sync(),
    /// before the window's lanes are cleared.
    void snapshot(core::Window window, const Counters& counters, std::int64_t start_ns, std::int64_t end_ns);
    /// A snapshot from the pool to be overwritten (an empty one without a pool).
    reports::Snapshot recycled_snapshot() const;
    reports::Report make_report(reports::ReportKind kind, const core::WindowSummary& summary,
                                const Counters& counters, double start, double end) const;
    /// --verify: the exact counts see the batch (throws VerifyLimitExceeded).
    void count_exactly();
    void advance_to(std::int64_t timestamp_ns);
    void start_new_interval();
    /// The report of a window: make_report, with its verify section under --verify.
    reports::Report window_report(reports::ReportKind kind, core::Window window, const Counters& counters,
                                  double start, double end);

    PipelineConfig config_;
    reports::ReportWriter& writer_;
    core::FlowMeasurement measurement_;
    capture::DecodeLimits limits_;
    std::vector<core::PacketRecord> batch_;
    // batch_'s tunnel tags, when a key spec reads them (tagged_); else empty.
    std::vector<core::TunnelTag> batch_tags_;
    bool tagged_ = false;
    std::size_t batch_limit_ = batch_capacity;
    // --threads 2: frames for the worker to decode, and what keeps their
    // bytes. A batch is filled either here or in batch_, never both.
    std::vector<capture::Frame> deferred_;
    std::vector<std::shared_ptr<const void>> deferred_storage_;
    int deferred_link_ = 0;
    bool defer_ = false;  // who decodes the batch being filled (chosen when it starts)
    // --threads 2 measures on this thread while the cores are taken by other work.
    CoreContention contention_;
    bool alone_ = false;
    std::unique_ptr<MeasurementWorker> worker_;  // --threads 2; declared after measurement_
    std::int64_t interval_ns_;
    bool started_ = false;
    std::int64_t interval_start_ns_ = 0;
    std::int64_t interval_end_ns_ = 0;
    bool seen_any_ = false;
    std::int64_t first_ns_ = 0;
    std::int64_t last_ns_ = 0;
    Counters interval_;
    Counters total_;  // closed intervals only
    std::vector<capture::CaptureStats> last_cumulative_;
    std::vector<reports::FileInterfaceReport> file_interfaces_;
    bool list_file_interfaces_ = false;
    bool truncated_ = false;
    bool overfill_announced_ = false;
    std::vector<std::string> warnings_;
    std::unique_ptr<core::ExactCounter> exact_;  // --verify
    core::VerifyVerdict verify_verdict_;
};

}  // namespace flowsketch::app
