// The measurement pipeline: frames → decoder → batches of keyed packets →
// FlowMeasurement, with interval boundaries in packet time and the Report
// assembled at each boundary.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "capture/decode.hpp"
#include "capture/pcap_file_source.hpp"
#include "core/flow_measurement.hpp"
#include "reports/report_writer.hpp"

namespace flowsketch::app {

struct PipelineConfig {
    core::MeasurementConfig measurement;
    double interval_seconds = 10.0;  // 0 = only the final report
    capture::DecodeLimits limits;
};

class Pipeline {
public:
    /// Throws std::invalid_argument on bad measurement parameters.
    Pipeline(const PipelineConfig& config, reports::ReportWriter& writer);

    /// Handles one frame of the given link type (packet time from the frame).
    void on_frame(const capture::Frame& frame, int link_type) {
        if (interval_ns_ > 0) {
            if (!started_) {
                begin_at(frame.timestamp_ns);
            } else if (frame.timestamp_ns >= interval_end_ns_) {
                close_interval(frame.timestamp_ns);
            }
        }
        note_time(frame.timestamp_ns);
        ++interval_.frames;
        capture::DecodedPacket decoded;
        const capture::SkipReason reason =
            capture::decode_frame(link_type, frame.data, frame.captured_length, decoded, limits_);
        if (reason != capture::SkipReason::none) {
            ++interval_.skipped[static_cast<std::size_t>(reason)];
            return;
        }
        batch_.push_back(core::PacketRecord{decoded.key, frame.timestamp_ns, frame.wire_length,
                                            decoded.tcp_flags});
        if (batch_.size() == batch_capacity) flush_batch();
    }

    /// Records that an input was cut short or damaged; shown in the next reports.
    void note_damage(const std::string& message);

    /// Emits the last interval (if intervals are on) and the final report.
    void finish();

    std::uint64_t frames_total() const noexcept { return total_.frames + interval_.frames; }

private:
    static constexpr std::size_t batch_capacity = 256;

    struct Counters {
        std::uint64_t frames = 0;
        std::array<std::uint64_t, capture::skip_reason_count> skipped{};
        void add(const Counters& other) noexcept;
    };

    void begin_at(std::int64_t timestamp_ns) noexcept;
    void note_time(std::int64_t timestamp_ns) noexcept {
        if (!seen_any_) {
            first_ns_ = last_ns_ = timestamp_ns;
            seen_any_ = true;
        }
        if (timestamp_ns > last_ns_) last_ns_ = timestamp_ns;
        if (timestamp_ns < first_ns_) first_ns_ = timestamp_ns;
    }
    void close_interval(std::int64_t next_timestamp_ns);
    void flush_batch() noexcept;
    reports::Report make_report(reports::ReportKind kind, const core::WindowSummary& summary,
                                const Counters& counters, double start, double end) const;

    PipelineConfig config_;
    reports::ReportWriter& writer_;
    core::FlowMeasurement measurement_;
    capture::DecodeLimits limits_;
    std::vector<core::PacketRecord> batch_;
    std::int64_t interval_ns_;
    bool started_ = false;
    std::int64_t interval_start_ns_ = 0;
    std::int64_t interval_end_ns_ = 0;
    bool seen_any_ = false;
    std::int64_t first_ns_ = 0;
    std::int64_t last_ns_ = 0;
    Counters interval_;
    Counters total_;  // closed intervals only
    bool truncated_ = false;
    std::vector<std::string> warnings_;
};

}  // namespace flowsketch::app
